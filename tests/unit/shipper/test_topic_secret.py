"""Where the topic secret comes from (libs/settings/topic_secret.py; README "Who may write the
topic"): a file only its owner reads, else the environment; never the command line; at least 32
bytes; every problem one line naming the option or setting, never the secret."""
from __future__ import annotations

import pytest

from libs.config.job import ConfigError, JobConfig
from libs.contracts.topic_tag import key_id
from libs.settings.topic_secret import ENV_PREVIOUS_SECRET, ENV_SECRET, TopicSecretError, read_topic_secrets

SECRET = "0123456789abcdef0123456789abcdef-topic"
PREVIOUS = "fedcba9876543210fedcba9876543210-older"
NAMES = ("--topic-secret-file", "--topic-previous-secret-file")


def _file(tmp_path, name: str, text: str, mode: int = 0o600) -> str:
    path = tmp_path / name
    path.write_text(text)
    path.chmod(mode)
    return str(path)


def test_a_file_its_owner_alone_reads_else_the_environment(tmp_path):
    secret = _file(tmp_path, "secret", SECRET + "\n")
    assert read_topic_secrets(secret, None, {}, NAMES) == (SECRET.encode(),)
    assert read_topic_secrets(secret, None, {ENV_SECRET: PREVIOUS}, NAMES) == (SECRET.encode(),)  # file wins
    assert read_topic_secrets(None, None, {ENV_SECRET: SECRET, ENV_PREVIOUS_SECRET: PREVIOUS}, NAMES) == (
        SECRET.encode(), PREVIOUS.encode())
    assert read_topic_secrets(None, None, {}, NAMES) == ()  # no secret: no tag, nothing checked
    assert read_topic_secrets(None, None, {ENV_SECRET: SECRET, ENV_PREVIOUS_SECRET: SECRET}, NAMES) == (
        SECRET.encode(),)


@pytest.mark.parametrize("text, mode, env, setting, reason", [
    (SECRET, 0o644, {}, "--topic-secret-file", "is readable by other users: chmod 600 it"),
    (SECRET, 0o640, {}, "--topic-secret-file", "is readable by other users: chmod 600 it"),
    ("short", 0o600, {}, "--topic-secret-file", "holds a topic secret of 5 bytes: at least 32 are needed"),
    ("\n", 0o600, {}, "--topic-secret-file", "is empty"),
    (None, None, {ENV_SECRET: "short"}, ENV_SECRET, "it is a topic secret of 5 bytes: at least 32"),
    (None, None, {ENV_PREVIOUS_SECRET: PREVIOUS}, "--topic-previous-secret-file",
     "a previous topic secret without the topic secret itself"),
])
def test_each_problem_is_one_line_naming_the_setting_never_the_secret(tmp_path, text, mode, env, setting,
                                                                      reason):
    secret = _file(tmp_path, "secret", text, mode) if text is not None else None
    with pytest.raises(TopicSecretError) as refused:
        read_topic_secrets(secret, None, env, NAMES)
    assert refused.value.setting == setting and reason in str(refused.value)
    assert SECRET not in str(refused.value) and "\n" not in str(refused.value)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(TopicSecretError, match=r"--topic-secret-file: cannot read .*/nothing: No such file"):
        read_topic_secrets(str(tmp_path / "nothing"), None, {}, NAMES)


def test_cdc_ship_refuses_the_secret_on_its_command_line_and_a_file_others_read(tmp_path, capsys):
    from pipelines.ship import main

    base = ["--from-file", str(tmp_path / "x"), "--bootstrap", "127.0.0.1:1", "--topic", "t", "--source", "s"]
    with pytest.raises(SystemExit) as ended:
        main([*base, "--topic-secret", SECRET])
    err = capsys.readouterr().err
    assert ended.value.code == 2 and "--topic-secret is not accepted" in err and SECRET not in err
    readable = _file(tmp_path, "readable", SECRET, 0o644)
    assert main([*base, "--topic-secret-file", readable]) == 2
    assert capsys.readouterr().err == (f"cdc-ship: --topic-secret-file: {readable} is readable by other "
                                       f"users: chmod 600 it (it holds a secret)\n")


def test_the_job_takes_the_secret_files_from_its_configuration(tmp_path):
    from pipelines.replicate import topic_keys

    secret, previous = _file(tmp_path, "s", SECRET), _file(tmp_path, "p", PREVIOUS)
    cfg = JobConfig(topic_secret_file=secret, topic_previous_secret_file=previous)
    keys = topic_keys(cfg, env={})
    assert keys.key_ids == (key_id(SECRET.encode()), key_id(PREVIOUS.encode()))
    assert topic_keys(JobConfig(), env={}) is None  # no secret: the job as before
    assert topic_keys(JobConfig(), env={ENV_SECRET: SECRET}).key_ids == (key_id(SECRET.encode()),)
    with pytest.raises(ConfigError, match=r"^topic_secret_file: .* is readable by other users"):
        topic_keys(JobConfig(topic_secret_file=_file(tmp_path, "r", SECRET, 0o604)), env={})
    with pytest.raises(ConfigError, match=r"^topic_secret_file: must be a string"):
        JobConfig(topic_secret_file=3)
