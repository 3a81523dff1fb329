"""The compiled part of the package; everything else is declared in setup.cfg.

libs/snapshot/_textrows.c parses the snapshot's row packets into Arrow buffers (libs/snapshot/
row_stream.py). Limited API 3.11 (abi3): one build serves Python 3.11 and 3.12. Not optional: a
build without a C compiler fails here instead of shipping a snapshot reader several times slower
(tests/unit/snapshot/test_row_stream.py also checks that it loads).
"""
from setuptools import Extension, setup

setup(
    ext_modules=[Extension("libs.snapshot._textrows", ["libs/snapshot/_textrows.c"], py_limited_api=True,
                           define_macros=[("Py_LIMITED_API", "0x030B0000")],
                           extra_compile_args=["-O2", "-Wall", "-Wextra",
                                               "-Wno-missing-field-initializers"])],
    options={"bdist_wheel": {"py_limited_api": "cp311"}},
)
