"""key_in (pipelines/apply/key_predicates.py): an IN list written as SQL text matches exactly
the rows `isin` matches, for strings Spark's literal parser would read otherwise (quotes,
backslash escapes, LIKE's \\% and \\_, unicode, control characters) and for integers beyond INT."""
import pytest
from pyspark.sql import functions as F

from pipelines.apply.key_predicates import key_in, sql_literals

pytestmark = pytest.mark.spark

STRINGS = ["plain", "it's", "back\\slash", "\\'", "50\\%", "a\\_b", "\\n", "\n", "tab\tx", "\\u0041", "A",
           "é中😀", "", "'", "\\", "\x00nul", "x'; DROP TABLE t; --"]


def _matched(df, predicate):
    return sorted(r[0] for r in df.filter(predicate).select("k").collect())


def test_strings_match_as_isin_does(spark):
    df = spark.createDataFrame([(s,) for s in STRINGS], "k string")
    for chosen in (STRINGS, STRINGS[1::2], ["\\n"], ["A"]):
        expected = sorted(chosen)
        assert sql_literals(chosen) is not None  # the SQL text path, not isin's
        assert _matched(df, key_in(["k"], [(s,) for s in chosen])) == expected
        assert _matched(df, F.col("k").isin(chosen)) == expected


def test_integers_of_any_width_and_a_qualified_column(spark):
    values = [-2**63, -1, 0, 7, 2**31, 2**63 - 1]
    df = spark.createDataFrame([(v,) for v in values], "k bigint").alias("t")
    assert _matched(df, key_in(["k"], [(v,) for v in values[::2]], qualifier="t")) == sorted(values[::2])


def test_other_types_and_bools_stay_with_isin():
    assert sql_literals([True]) is None and sql_literals([1.5]) is None and sql_literals([b"x"]) is None
    assert sql_literals(["a\\b"], escaping=False) is None and sql_literals(["ab"], escaping=False) == "'ab'"
