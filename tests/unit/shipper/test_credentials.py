"""The replication password: from a file, a MySQL option file or the environment, never from
the command line; never in a repr or an error message."""
import os

import pytest

from libs.source import credentials
from libs.source.credentials import Credentials, read_option_file, resolve
from libs.source.errors import CredentialError
from libs.source.replica_source import ServerOptions
from pipelines.ship import build_parser, main

SECRET = "s3cr#t 'pw'"


def write(path, text, mode=0o600):
    path.write_text(text)
    os.chmod(path, mode)
    return path


def test_password_file_keeps_the_password_but_its_trailing_newline(tmp_path):
    pw = write(tmp_path / "pw", SECRET + "\n")
    creds = resolve(user="cdc", password_file=pw, option_file=None, env_password="from-env")
    assert (creds.user, creds.password) == ("cdc", SECRET)


def test_option_file_client_group_as_mysql_reads_it(tmp_path):
    opt = write(tmp_path / "my.cnf", "# replica credentials\n[mysqld]\npassword=not-this-one\n"
                "[client]\nuser = cdc  # a comment\npassword=\"s3cr#t 'pw'\"\nssl\n")
    assert read_option_file(opt) == {"user": "cdc", "password": SECRET}
    creds = resolve(user=None, password_file=None, option_file=opt, env_password="from-env")
    assert (creds.user, creds.password) == ("cdc", SECRET)


def test_option_value_escapes_and_unquoted_comment():
    assert credentials._option_value(r"a\sb\\c") == "a b\\c"
    assert credentials._option_value("abc#def") == "abc"
    assert credentials._option_value("'ab#c'") == "ab#c"


def test_environment_is_the_fallback_and_flags_win(tmp_path):
    assert resolve(user="u", password_file=None, option_file=None,
                   env_password="from-env").password == "from-env"
    assert resolve(user="u", password_file=None, option_file=None, env_password=None) == \
        Credentials("u", "", "none")
    opt = write(tmp_path / "my.cnf", "[client]\npassword=x\n")
    pw = write(tmp_path / "pw", "y")
    with pytest.raises(CredentialError, match="give it once"):
        resolve(user="u", password_file=pw, option_file=opt, env_password=None)


@pytest.mark.parametrize("text, match", [
    (f"password={SECRET}\n", "line 1: an option before any"),
    (f"[client]\nuser=cdc\n={SECRET}\n", "cannot parse line\\(s\\) 3"),  # configparser would quote it
])
def test_option_file_errors_name_the_line_never_its_text(tmp_path, text, match):
    opt = write(tmp_path / "my.cnf", text)
    with pytest.raises(CredentialError, match=match) as err:
        read_option_file(opt)
    assert "s3cr" not in str(err.value) and str(opt) in str(err.value)


def test_empty_or_missing_password_file_is_a_credential_error(tmp_path):
    with pytest.raises(CredentialError, match="empty"):
        credentials.read_password_file(write(tmp_path / "pw", "\n"))
    with pytest.raises(CredentialError, match="cannot read"):
        credentials.read_password_file(tmp_path / "missing")


def test_no_repr_shows_the_password():
    assert SECRET not in repr(ServerOptions("h", 1, "cdc", SECRET))
    assert SECRET not in repr(Credentials("cdc", SECRET, "file x"))


def test_password_on_the_command_line_is_refused_without_echoing_it(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--server", "127.0.0.1:1", "--user", "cdc", "--password", SECRET,
              "--bootstrap", "127.0.0.1:1", "--topic", "t", "--source", "s"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "--password is not accepted" in err and "s3cr" not in err
    assert "--password-file" in build_parser().format_help()
    assert "--password " not in build_parser().format_help()


def test_server_without_any_user_is_a_one_line_error(capsys, tmp_path):
    rc = main(["--server", "127.0.0.1:1", "--password-file", str(write(tmp_path / "pw", "x")),
               "--bootstrap", "127.0.0.1:1", "--topic", "t", "--source", "s"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "needs a user" in err
