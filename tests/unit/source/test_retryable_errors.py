"""The rule table of libs/source/retryable_errors.py: which source error is an outage (retried)
and which a refusal (one line, exit 1); and both users of it, a failed connection and a dump."""
import pytest
from pymysql.err import OperationalError

from libs.shipper.server_dump import retryable
from libs.source.replica_source import ConnectError, ServerOptions, connect_error
from libs.source.retryable_errors import is_lost_connection

OUTAGES = [0, 2003, 2006, 2013, 2055, 1040, 1053, 1152, 1158, 1159, 1160, 1161, 3032, 4031]
REFUSALS = [1045, 1130, 1227, 1236, 1927, 2059, 2061, 3159, 3118, 4151, 1999, 3000]


@pytest.mark.parametrize("code", OUTAGES)
def test_an_outage_is_retried(code):
    assert is_lost_connection(code)
    assert retryable(OperationalError(code, "x"))


@pytest.mark.parametrize("code", REFUSALS)
def test_a_refusal_is_not(code):
    assert not is_lost_connection(code)
    assert not retryable(OperationalError(code, "x"))


@pytest.mark.parametrize("code, kind", [(2013, ConnectError), (1053, ConnectError), (3159, None),
                                        (4151, None), (1045, None)])
def test_a_failed_connection_is_a_connect_error_only_for_an_outage(code, kind):
    opts = ServerOptions(host="db", port=3306, user="cdc", password="pw")
    error = connect_error(opts, OperationalError(code, "the server's text"))
    assert (type(error) is ConnectError) == (kind is ConnectError)
    assert str(error).startswith(f"cannot connect to db:3306 as cdc: {code}")
