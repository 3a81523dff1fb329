"""The Kafka source's secrets (README "Security") never show in a plan Spark prints: `explain` of
the job's Kafka stream, before it starts (whose v1 relation prints its options unredacted, but for
the job's string redaction) and its options (the session's redaction regexes)."""
import pytest

from libs.config.job import JobConfig
from libs.settings.kafka_security import KafkaSecurity
from pipelines.job import spark_session
from pipelines.replicate import read_topic

pytestmark = pytest.mark.spark

PASSWORD, PASSPHRASE = 'Scr4m-spark-pw "q\\z', "k3y-spark-phrase"
KEY_BODY = "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49"
CERT = "-----BEGIN CERTIFICATE-----\nMIIBcDCCARWgAwIBAgIU\n-----END CERTIFICATE-----\n"
KEY = f"-----BEGIN ENCRYPTED PRIVATE KEY-----\n{KEY_BODY}\n-----END ENCRYPTED PRIVATE KEY-----\n"


def _private(path, text):
    path.write_text(text)
    path.chmod(0o600)
    return str(path)


def test_explain_of_the_kafka_stream_shows_no_secret(spark, tmp_path, capsys):
    security = KafkaSecurity(security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512",
                             sasl_username="cdc", ca_file=_private(tmp_path / "ca.pem", CERT),
                             cert_file=_private(tmp_path / "c.pem", CERT),
                             key_file=_private(tmp_path / "c.key", KEY),
                             key_password_file=_private(tmp_path / "k", PASSPHRASE))
    cfg = JobConfig(bootstrap="127.0.0.1:1", kafka_security=security)
    auth = security.resolve({"CDC_KAFKA_SASL_PASSWORD": PASSWORD})
    assert spark.conf.get("spark.sql.redaction.string.regex") == spark_session.STRING_REDACTION_REGEX
    assert spark_session.kafka_class_prefix(spark) == ""  # the JAAS line names the Apache classes here
    read_topic(spark, cfg, auth).explain(True)
    shown = capsys.readouterr().out
    assert "kafka.sasl.jaas.config" in shown and "redacted" in shown  # the options were printed
    assert [s for s in ("Scr4m-spark-pw", PASSPHRASE, KEY_BODY) if s in shown] == []
