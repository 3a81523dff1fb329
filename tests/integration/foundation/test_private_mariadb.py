"""The private MariaDB of the tests (libs/local/mariadb_server.py) keeps its temporary files in
its own directory: the suite's two workers start a server each at the same moment, and with the
shared /tmp one worker's mariadb-install-db deleted the other's temporary tables ("Error on delete
of '/tmp/#sql-temptable-...'"), erroring every integration test of that worker."""
from __future__ import annotations


def test_the_server_keeps_its_temporary_tables_in_its_own_directory(mariadb):
    assert mariadb.query("SELECT @@tmpdir")[0][0] == str(mariadb.tmp_dir)
    assert mariadb.tmp_dir.parent == mariadb.base_dir
