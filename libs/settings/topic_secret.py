"""The topic secret (README "Who may write the topic"; libs/contracts/topic_tag.py): read from a
file only its owner may read, or from the environment; never from a command line, a log line or
an error message (errors name the setting and the file, never a file's text).

    cdc-ship        --topic-secret-file F           else CDC_TOPIC_SECRET
                    --topic-previous-secret-file F  else CDC_TOPIC_PREVIOUS_SECRET (rotation)
    cdc-replicate   topic_secret_file: F            else CDC_TOPIC_SECRET
                    topic_previous_secret_file: F   else CDC_TOPIC_PREVIOUS_SECRET

The file's text is the secret (one trailing newline dropped), at least MIN_SECRET_BYTES bytes of
UTF-8: `openssl rand -hex 32 > F; chmod 600 F` makes one. A file group or other users may read is
refused, as kafka_security refuses a password file (its helper reads both). Libraries do not read
the environment: the entry points pass it in.
"""
from __future__ import annotations

from typing import Mapping

from libs.settings.errors import ConfigError
from libs.settings.kafka_security import KafkaSecurityError, _secret

MIN_SECRET_BYTES = 32
ENV_SECRET = "CDC_TOPIC_SECRET"
ENV_PREVIOUS_SECRET = "CDC_TOPIC_PREVIOUS_SECRET"


class TopicSecretError(ConfigError):
    """A problem of one setting (`setting`: the job's setting name, cdc-ship's option, or the
    environment variable), told in `reason`; never the secret."""

    def __init__(self, setting_name: str, reason: str):
        self.setting, self.reason = setting_name, reason
        super().__init__(f"{setting_name}: {reason}")


def _one(file: str | None, name: str, env: Mapping[str, str], variable: str) -> bytes | None:
    try:
        text = _secret(file, name, env, variable)
    except KafkaSecurityError as exc:
        raise TopicSecretError(exc.setting, exc.reason) from None
    if text is None:
        return None
    secret = text.encode("utf-8")
    if len(secret) < MIN_SECRET_BYTES:
        where = f"{file} holds" if file is not None else "it is"
        raise TopicSecretError(name if file is not None else variable,
                               f"{where} a topic secret of {len(secret)} bytes: at least {MIN_SECRET_BYTES} "
                               f"are needed (openssl rand -hex 32 makes one)")
    return secret


def read_topic_secrets(secret_file: str | None, previous_file: str | None, env: Mapping[str, str],
                       names: tuple[str, str]) -> tuple[bytes, ...]:
    """(secret, previous secret) as given, () when neither the file nor the environment gives a
    secret; `names`: how the two files' settings are named in errors (the job's settings or
    cdc-ship's options). A previous secret without a secret is refused."""
    secret = _one(secret_file, names[0], env, ENV_SECRET)
    previous = _one(previous_file, names[1], env, ENV_PREVIOUS_SECRET)
    if secret is None:
        if previous is not None:
            raise TopicSecretError(names[1], f"a previous topic secret without the topic secret itself "
                                             f"({names[0]} or {ENV_SECRET})")
        return ()
    return (secret,) if previous is None or previous == secret else (secret, previous)
