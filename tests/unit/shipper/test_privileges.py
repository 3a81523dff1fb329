"""A source's refusal for want of a privilege -> the grant README "Preparing the source" names
(libs/source/privileges.py). Messages as MariaDB 10.11 and MySQL 8.0 word them."""
import pytest
from pymysql.err import InternalError, OperationalError, ProgrammingError

from libs.source.privileges import (BINLOG_DUMP, REPLICATION_CLIENT, REPLICATION_SLAVE, SELECT, access_error,
                                     needed_privilege)

MARIADB_1227 = ("Access denied; you need (at least one of) the SUPER, BINLOG MONITOR privilege(s) for this "
                "operation")
MYSQL_1227 = ("Access denied; you need (at least one of) the SUPER, REPLICATION CLIENT privilege(s) for this "
              "operation")


@pytest.mark.parametrize("exc, operation, needed", [
    (OperationalError(1227, MARIADB_1227), "SHOW BINARY LOGS", REPLICATION_CLIENT),
    (OperationalError(1227, MYSQL_1227), "SHOW MASTER STATUS", REPLICATION_CLIENT),
    (OperationalError(1227, "Access denied; you need (at least one of) the RELOAD privilege(s) "
                            "for this operation"),
     "FLUSH TABLES WITH READ LOCK", "RELOAD"),
    (OperationalError(1227, "Access denied; you need (at least one of) the REPLICATION SLAVE privilege(s) "
                            "for this operation"), BINLOG_DUMP, REPLICATION_SLAVE),
    (OperationalError(1045, "Access denied for user 'cdc'@'%' (using password: YES)"),
     BINLOG_DUMP, REPLICATION_SLAVE),
    (OperationalError(1045, "Access denied for user 'cdc'@'%' (using password: YES)"),
     "SHOW BINARY LOGS", None),
    (ProgrammingError(1142, "SELECT command denied to user 'cdc'@'localhost' for table `shop`.`t`"),
     "SHOW CREATE TABLE `shop`.`t`", SELECT),
    (OperationalError(1044, "Access denied for user 'cdc'@'%' to database 'shop'"), "USE shop", SELECT),
    (OperationalError(1236, "Could not find first log file name in binary log index file"),
     BINLOG_DUMP, None),
    (OperationalError(2013, "Lost connection to MySQL server during query"), "SHOW BINARY LOGS", None),
    (InternalError(1227, "Access denied; you need (at least one of) the SYSTEM_VARIABLES_ADMIN privilege(s)"),
     "SET GLOBAL x", "SYSTEM_VARIABLES_ADMIN"),
])
def test_the_privilege_a_refusal_asks_for(exc, operation, needed):
    assert needed_privilege(exc, operation) == needed


def test_the_line_names_server_privilege_statement_and_code():
    line = str(access_error("127.0.0.1:3306", OperationalError(1227, MARIADB_1227),
                            "SHOW BINARY LOGS", source="shop"))
    assert line == ("source 127.0.0.1:3306: access denied: needs REPLICATION CLIENT (BINLOG MONITOR) for "
                    "SHOW BINARY LOGS (error 1227) (source shop)")
    assert access_error("h:1", OperationalError(2003, "Can't connect"), "SHOW BINARY LOGS") is None


def test_a_server_without_binlog_says_so():
    line = str(access_error("h:1", OperationalError(1381, "You are not using binary logging"),
                            "SHOW BINARY LOGS"))
    assert line == ("source h:1: the binary log is off: start the server with log_bin "
                    "(refused SHOW BINARY LOGS, error 1381)")
