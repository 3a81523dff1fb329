"""cdc-ship --server against a private MariaDB: the replication password from a file, a MySQL
option file or the environment, and never in what cdc-ship prints when the login fails."""
import pytest

from libs.shipper.kafka_sink import last_record
from pipelines.ship import main

from .helpers import password_file, shipper_output, start_shipper

pytestmark = pytest.mark.integration

WRONG = "Wr0ng-s3cret-do-not-print"


def common(db, kafka_broker, topic, source, *credential_args):
    return ["--server", f"{db.host}:{db.port}", *credential_args, "--bootstrap",
            kafka_broker.bootstrap, "--topic", topic, "--source", source,
            "--start-file", db.flush_binlogs(), "--non-block"]


def test_password_file_option_file_and_environment_each_log_in(mariadb, kafka_broker, topic,
                                                               tmp_path, monkeypatch):
    option_file = tmp_path / "replica.cnf"
    option_file.write_text(f"[client]\nuser={mariadb.user}\npassword=\"{mariadb.password}\"\n")
    option_file.chmod(0o600)
    runs = {
        "pw-file": ("--user", mariadb.user, "--password-file", password_file(mariadb)),
        "opt-file": ("--defaults-extra-file", str(option_file)),
        "env": ("--user", mariadb.user),
    }
    monkeypatch.setenv("CDC_SOURCE_PASSWORD", mariadb.password)
    for source, creds in runs.items():
        assert main(common(mariadb, kafka_broker, topic, source, *creds)) == 0, source
        assert last_record(kafka_broker.bootstrap, topic, source) is not None, source


def test_a_refused_login_is_one_line_without_the_password(mariadb, kafka_broker, topic,
                                                          tmp_path):
    """Access denied (1045) is final: one line, exit 1, in seconds (it used to be retried for
    a minute as if the server were unreachable). The password given appears nowhere."""
    wrong = tmp_path / "wrong-password"
    wrong.write_text(WRONG + "\n")
    wrong.chmod(0o600)
    runs = [
        ("--user", mariadb.user, "--password-file", str(wrong)),
        ("--user", mariadb.user),  # from the environment below
    ]
    for creds in runs:
        proc = start_shipper(*common(mariadb, kafka_broker, topic, "denied", *creds),
                             env={"CDC_SOURCE_PASSWORD": WRONG})
        rc = proc.wait(timeout=30)
        out = shipper_output(proc)
        proc.log_path.unlink(missing_ok=True)
        assert rc == 1, out
        assert "Access denied" in out and WRONG not in out and "Traceback" not in out
        assert len(out.strip().splitlines()) == 1, out
