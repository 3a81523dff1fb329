def pytest_configure(config):
    config.addinivalue_line(
        "markers", "corpus_full: whole big corpus files (slower, still part of the default run)")
