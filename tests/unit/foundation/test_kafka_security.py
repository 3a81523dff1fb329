"""Kafka client security (issue #56 item 1; libs/settings/kafka_security.py): the settings
validated with one line naming the setting, the secrets read from owner-only files or the
environment, and the two mappings, librdkafka's names and the Spark source's `kafka.` Java names,
with every option holding a secret redacted by the job's session (README "Security")."""
import re

import pytest
import yaml

from libs.config.job import ConfigError, JobConfig, load_config
from libs.runtime.paths import REPO_ROOT
from libs.settings import kafka_security as ks
from libs.settings.kafka_security import KafkaSecurity, KafkaSecurityError
from pipelines.job import spark_session

PASSWORD, PASSPHRASE = 'p@ss "w\\rd', "k3y-phrase"
KEY_BODY = "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg"
CERT = "-----BEGIN CERTIFICATE-----\nMIIBcDCCARWgAwIBAgIU\n-----END CERTIFICATE-----\n"
KEY = f"-----BEGIN PRIVATE KEY-----\n{KEY_BODY}\n-----END PRIVATE KEY-----\n"
ENCRYPTED = f"-----BEGIN ENCRYPTED PRIVATE KEY-----\n{KEY_BODY}\n-----END ENCRYPTED PRIVATE KEY-----\n"
SCRAM = dict(security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512", sasl_username="cdc")


def private(path, text):
    path.write_text(text)
    path.chmod(0o600)
    return str(path)


@pytest.fixture
def files(tmp_path):
    return {"ca_file": private(tmp_path / "ca.pem", CERT),
            "cert_file": private(tmp_path / "client.pem", CERT),
            "key_file": private(tmp_path / "client.key", ENCRYPTED),
            "key_password_file": private(tmp_path / "key.pass", PASSPHRASE + "\n"),
            "sasl_password_file": private(tmp_path / "sasl.pass", PASSWORD + "\n")}


@pytest.mark.parametrize("settings, setting, reason", [
    ({"security_protocol": "TLS"}, "security_protocol", "must be one of"),
    ({"security_protocol": "SASL_SSL"}, "sasl_mechanism", "required with security_protocol SASL_SSL"),
    ({"security_protocol": "SSL", "sasl_mechanism": "PLAIN"}, "sasl_mechanism", "only with a SASL_*"),
    ({"sasl_username": "u"}, "sasl_username", "only with a SASL_* security_protocol, got security_protocol "
                                               "PLAINTEXT"),
    ({"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-1"}, "sasl_mechanism", "must be one of"),
    ({"security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN"}, "sasl_username", "required with"),
    ({"ca_file": "ca.pem"}, "ca_file", "only with security_protocol SSL or SASL_SSL"),
    ({"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN", "sasl_username": "u",
      "cert_file": "c.pem", "key_file": "k.pem"}, "cert_file", "only with security_protocol SSL or SASL_SSL"),
    ({"verify_hostname": False}, "verify_hostname", "only with security_protocol SSL or SASL_SSL"),
    ({"security_protocol": "SSL", "verify_hostname": "no"}, "verify_hostname", "must be true or false"),
    ({"security_protocol": "SSL", "cert_file": "c.pem"}, "key_file", "needs both cert_file and key_file"),
    ({"security_protocol": "SSL", "key_password_file": "p"}, "key_password_file", "needs key_file"),
    ({**SCRAM, "oauth_scope": "s"}, "oauth_scope", "only with sasl_mechanism OAUTHBEARER"),
    ({**SCRAM, "sasl_mechanism": "OAUTHBEARER"}, "oauth_token_endpoint", "required with"),
    ({**SCRAM, "sasl_mechanism": "OAUTHBEARER", "oauth_token_endpoint": "http://idp/token"},
     "oauth_token_endpoint", "must be an https:// URL"),
    ({**SCRAM, "sasl_username": ""}, "sasl_username", "must not be empty"),
])
def test_a_bad_setting_is_one_line_naming_it(settings, setting, reason):
    with pytest.raises(KafkaSecurityError) as err:
        KafkaSecurity(**settings)
    assert (err.value.setting, "\n" in str(err.value)) == (setting, False)
    assert reason in err.value.reason


def test_the_job_configuration_names_the_section_and_documents_every_setting(tmp_path):
    conf = tmp_path / "job.yaml"
    conf.write_text("kafka_security:\n  security_protocol: SASL_SSL\n  sasl_mechanism: PLAIN\n")
    with pytest.raises(ConfigError, match=f"^{conf}: kafka_security.sasl_username: required with"):
        load_config(conf)
    conf.write_text("kafka_security:\n  sasl_password: x\n")
    with pytest.raises(ConfigError, match="kafka_security: unknown setting"):
        load_config(conf)
    assert JobConfig(kafka_security=SCRAM).kafka_security == KafkaSecurity(**SCRAM)
    assert load_config(REPO_ROOT / "conf" / "job.yaml").kafka_security == KafkaSecurity()
    conf_comments = (REPO_ROOT / "conf" / "job.yaml").read_text()
    readme = (REPO_ROOT / "README.md").read_text()
    names = list(KafkaSecurity.__dataclass_fields__)
    assert [n for n in names if not re.search(rf"^#.*\b{n}:", conf_comments, re.M)] == []
    assert [n for n in names if f"`{n}`" not in readme or ks.option_name(n) not in readme] == []


def test_secrets_come_from_owner_only_files_else_the_environment(files):
    auth = KafkaSecurity(**SCRAM, **files).resolve({ks.ENV_SASL_PASSWORD: "from-env"})
    assert (auth.sasl_password, auth.key_password) == (PASSWORD, PASSPHRASE)  # a file wins; newline dropped
    no_files = {k: v for k, v in files.items() if k not in ("sasl_password_file", "key_password_file")}
    auth = KafkaSecurity(**SCRAM, **no_files).resolve({ks.ENV_SASL_PASSWORD: PASSWORD,
                                                       ks.ENV_KEY_PASSWORD: PASSPHRASE})
    assert (auth.sasl_password, auth.key_password) == (PASSWORD, PASSPHRASE)
    assert auth.ca_pem == auth.cert_pem == CERT and auth.key_pem == ENCRYPTED


@pytest.mark.parametrize("change, setting, reason", [
    ({"sasl_password_file": None}, "sasl_password_file",
     "SCRAM-SHA-512 needs a password: sasl_password_file or the environment variable "
     "CDC_KAFKA_SASL_PASSWORD"),
    ({"key_password_file": None}, "key_password_file", "is encrypted: its passphrase in key_password_file or "
                                                       "the environment variable CDC_KAFKA_KEY_PASSWORD"),
    ({"sasl_password_file": "missing"}, "sasl_password_file", "cannot read missing: No such file"),
    ({"ca_file": "KEY"}, "ca_file", "holds no PEM CERTIFICATE block"),
    ({"key_file": "CERT"}, "key_file", "holds no PEM PRIVATE KEY or ENCRYPTED PRIVATE KEY block"),
])
def test_a_missing_or_wrong_secret_or_file_is_refused_naming_the_setting(files, change, setting, reason):
    settings = {**files, **{k: files["key_file"] if v == "KEY" else files["cert_file"] if v == "CERT" else v
                            for k, v in change.items()}}
    with pytest.raises(KafkaSecurityError) as err:
        KafkaSecurity(**SCRAM, **settings).resolve({})
    assert err.value.setting == setting and reason in err.value.reason
    assert PASSWORD not in str(err.value) and KEY_BODY not in str(err.value)


def test_files_others_may_read_an_empty_one_and_a_pkcs1_key_are_refused(files, tmp_path):
    for name in ("sasl_password_file", "key_file", "key_password_file"):
        bad = tmp_path / f"open-{name}"
        bad.write_text(open(files[name]).read())
        bad.chmod(0o640)
        with pytest.raises(KafkaSecurityError, match=f"{name}: .* is readable by other users: chmod 600"):
            KafkaSecurity(**SCRAM, **{**files, name: str(bad)}).resolve({})
    empty = private(tmp_path / "empty", "\n")
    with pytest.raises(KafkaSecurityError, match=f"sasl_password_file: {empty} is empty"):
        KafkaSecurity(**SCRAM, **{**files, "sasl_password_file": empty}).resolve({})
    rsa = private(tmp_path / "rsa.key",
                  "-----BEGIN RSA PRIVATE KEY-----\nMII\n-----END RSA PRIVATE KEY-----\n")
    with pytest.raises(KafkaSecurityError, match="a PKCS#1/SEC1 key: convert it with openssl pkcs8 -topk8"):
        KafkaSecurity(**SCRAM, **{**files, "key_file": rsa}).resolve({})
    plain_key = private(tmp_path / "plain.key", KEY)
    with pytest.raises(KafkaSecurityError, match="key_password_file: .* is not encrypted"):
        KafkaSecurity(**SCRAM, **{**files, "key_file": plain_key}).resolve({})


def test_plaintext_maps_to_nothing_the_clients_as_before():
    auth = KafkaSecurity().resolve({ks.ENV_SASL_PASSWORD: PASSWORD})
    assert auth == ks.PLAINTEXT_AUTH and auth.librdkafka() == {} and auth.spark_options() == {}


def test_sasl_ssl_scram_with_a_client_certificate_in_both_libraries_names(files):
    auth = KafkaSecurity(**SCRAM, **files).resolve({})
    assert auth.librdkafka() == {
        "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "cdc",
        "sasl.password": PASSWORD, "ssl.endpoint.identification.algorithm": "https",
        "ssl.ca.location": files["ca_file"], "ssl.certificate.location": files["cert_file"],
        "ssl.key.location": files["key_file"], "ssl.key.password": PASSPHRASE}
    assert auth.spark_options() == {
        "kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                                  'username="cdc" password="p@ss \\"w\\\\rd";',
        "kafka.ssl.endpoint.identification.algorithm": "https",
        "kafka.ssl.truststore.type": "PEM", "kafka.ssl.truststore.certificates": CERT,
        "kafka.ssl.keystore.type": "PEM", "kafka.ssl.keystore.certificate.chain": CERT,
        "kafka.ssl.keystore.key": ENCRYPTED, "kafka.ssl.key.password": PASSPHRASE}


def test_plain_oauthbearer_ssl_and_a_shaded_client(files, tmp_path):
    plain = KafkaSecurity(security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN", sasl_username="u",
                          sasl_password_file=files["sasl_password_file"]).resolve({})
    assert plain.librdkafka() == {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                                  "sasl.username": "u", "sasl.password": PASSWORD}
    assert plain.spark_options("kafkashaded.")["kafka.sasl.jaas.config"].startswith(
        "kafkashaded.org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\"")
    oauth = KafkaSecurity(**{**SCRAM, "sasl_mechanism": "OAUTHBEARER"}, oauth_token_endpoint="https://idp/t",
                          oauth_scope="kafka").resolve({ks.ENV_SASL_PASSWORD: "s3cret"})
    assert oauth.librdkafka() == {
        "security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.client.id": "cdc", "sasl.oauthbearer.client.secret": "s3cret",
        "sasl.oauthbearer.token.endpoint.url": "https://idp/t", "sasl.oauthbearer.scope": "kafka",
        "ssl.endpoint.identification.algorithm": "https"}
    java = oauth.spark_options()
    assert java["kafka.sasl.jaas.config"] == (
        'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId="cdc" '
        'clientSecret="s3cret" scope="kafka";')
    assert java["kafka.sasl.login.callback.handler.class"] == (
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler")
    assert java["kafka.sasl.oauthbearer.token.endpoint.url"] == "https://idp/t"
    both = private(tmp_path / "both.pem", KEY + CERT)  # one file: the key and its certificate
    tls = KafkaSecurity(security_protocol="SSL", cert_file=both, key_file=both,
                        verify_hostname=False).resolve({})
    assert tls.librdkafka() == {"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "none",
                                "ssl.certificate.location": both, "ssl.key.location": both}
    java = tls.spark_options()
    assert (java["kafka.ssl.keystore.key"], java["kafka.ssl.keystore.certificate.chain"],
            java["kafka.ssl.endpoint.identification.algorithm"]) == (KEY, CERT, "")


def test_no_repr_description_or_error_holds_a_secret(files):
    auth = KafkaSecurity(**SCRAM, **files).resolve({})
    shown = repr(auth) + str(auth) + auth.describe() + repr(auth.security)
    assert PASSWORD not in shown and PASSPHRASE not in shown and KEY_BODY not in shown
    assert auth.describe() == f"SASL_SSL, SCRAM-SHA-512 as cdc, CA {files['ca_file']}, client certificate " \
                              f"{files['cert_file']}"


def test_every_spark_option_holding_a_secret_is_redacted_by_the_session(files):
    """Spark redacts an option whose key or value matches spark.redaction.regex (or the options
    regex); the plan texts' secrets by the string regex (Java's regex syntax as Python's here)."""
    auth = KafkaSecurity(**SCRAM, **files).resolve({})
    secrets = (PASSWORD.replace("\\", "\\\\").replace('"', '\\"'), PASSPHRASE, KEY_BODY)
    confs = {"spark.redaction.regex": spark_session.REDACTION_REGEX, **spark_session.REDACTION_CONFS}
    for key, value in auth.spark_options().items():
        if any(s in value for s in secrets):
            assert any(re.search(confs[c], key) or re.search(confs[c], value)
                       for c in ("spark.redaction.regex", "spark.sql.redaction.options.regex")), key
    plan = "HashMap(" + ", ".join(f"{k} -> {v}" for k, v in auth.spark_options().items()) + ")"
    redacted = re.sub(confs["spark.sql.redaction.string.regex"], "*********(redacted)", plan)
    assert [s for s in secrets if s in redacted] == [] and "kafka.ssl.truststore.certificates" in redacted
    cluster = yaml.safe_load((REPO_ROOT / "databricks.yml").read_text())
    spark_conf = cluster["resources"]["jobs"]["cdc_replicate"]["tasks"][0]["new_cluster"]["spark_conf"]
    assert spark_conf["spark.redaction.regex"] == spark_session.REDACTION_REGEX


def test_jaas_values_are_quoted_for_javas_tokenizer():
    assert ks.jaas_quoted('a"b\\c\nd') == 'a\\"b\\\\c\\nd'


def test_cdc_ship_takes_every_setting_as_an_option_and_refuses_a_secret_on_the_command_line(capsys, files):
    from pipelines.ship import build_parser, main

    ap = build_parser()
    taken = {o for action in ap._actions for o in action.option_strings}
    assert {ks.option_name(f) for f in KafkaSecurity.__dataclass_fields__} <= taken
    args = ap.parse_args(["--from-file", "f", "--bootstrap", "h:1", "--topic", "t", "--source", "s",
                          "--kafka-security-protocol", "SASL_SSL", "--kafka-sasl-mechanism", "SCRAM-SHA-512",
                          "--kafka-sasl-username", "cdc", "--no-kafka-verify-hostname",
                          "--kafka-sasl-password-file", files["sasl_password_file"]])
    assert ks.from_arguments(args) == KafkaSecurity(**SCRAM, verify_hostname=False,
                                                    sasl_password_file=files["sasl_password_file"])
    common = ["--from-file", "f", "--bootstrap", "h:1", "--topic", "t", "--source", "s"]
    for option in ("--kafka-sasl-password", "--kafka-key-password"):
        assert main([*common, option, "hunter2-secret"]) == 2
        out = capsys.readouterr().err
        assert out.startswith(f"cdc-ship: {option}: not accepted on the command line")
        assert "hunter2" not in out
        assert len(out.strip().splitlines()) == 1
    assert main([*common, "--kafka-security-protocol", "SASL_SSL"]) == 2
    assert capsys.readouterr().err == ("cdc-ship: --kafka-sasl-mechanism: required with security_protocol "
                                       "SASL_SSL: one of ('PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512', "
                                       "'OAUTHBEARER')\n")


def test_a_refused_kafka_login_is_not_logged_per_attempt_but_an_unreachable_broker_is():
    """conf/log4j2.properties: the Kafka client's and Spark's line per failed login attempt are
    dropped (the job's last line names the cause); a broker that cannot be reached still shows."""
    from libs.runtime.log4j_conf import logger_settings

    quiet = logger_settings(spark_session.LOG4J_CONF.read_text())
    lines = {  # as a job with a wrong password printed them (Kafka clients 3.9, Spark 4.0)
        "org.apache.kafka.clients.NetworkClient":
            "[AdminClient clientId=adminclient-1] Connection to node -1 (localhost/127.0.0.1:40781) failed "
            "authentication due to: Authentication failed during authentication due to invalid credentials",
        "org.apache.kafka.clients.admin.internals.AdminMetadataManager":
            "[AdminClient clientId=adminclient-1] Metadata update failed due to authentication error",
        "org.apache.spark.sql.kafka010.KafkaOffsetReaderAdmin": "Error in attempt 1 getting Kafka offsets: "}
    for logger, line in lines.items():
        [regex] = [v for k, v in quiet[logger].items() if k.endswith(".regex")]
        assert quiet[logger]["level"] == "warn" and re.fullmatch(regex, line), logger
    network = quiet["org.apache.kafka.clients.NetworkClient"]["filter.login.regex"]
    assert not re.fullmatch(network, "[AdminClient clientId=adminclient-1] Connection to node -1 (localhost/"
                                     "127.0.0.1:1) could not be established. Node may not be available.")
