"""libs/settings/errors.cause_line: the one line a user reads when the job fails without --verbose."""
import pytest

from libs.settings.errors import cause_line


@pytest.mark.parametrize("text, line", [
    ("[FOREACH_BATCH_USER_FUNCTION_ERROR] An error occurred\nTraceback (most recent call last):\n"
     "  File \"x.py\", line 1, in f\npyspark.errors.exceptions.captured.AnalysisException: [PATH] gone\n"
     "OSError: [Errno 20] Not a directory: '/f/delta'\n\tat org.apache.spark.X(X.scala:1)",
     "OSError: [Errno 20] Not a directory: '/f/delta'"),
    ("libs.runtime.stops.SchemaChangeStopped: batch 3: stop\n  more", "SchemaChangeStopped: batch 3: stop"),
    ("plain first line\nsecond", "plain first line"),
    ("", ""),
])
def test_cause_line_is_the_innermost_python_error_or_the_first_line(text, line):
    assert cause_line(text) == line
