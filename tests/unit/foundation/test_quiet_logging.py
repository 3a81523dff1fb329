"""conf/log4j2.properties (issue #39 item 7): the Spark lines that say nothing the user can act
on are configured away, read from the file the jobs pass to their driver (libs/runtime/log4j_conf.py)."""
import re

from libs.runtime.log4j_conf import logger_settings
from pipelines.job.spark_session import LOG4J_CONF

# Spark 4.0's own text of each line (ProcessingTimeExecutor.notifyBatchFallingBehind,
# DAGScheduler.handleJobGroupCancelled), as printed by a local job before this change.
FALLING_BEHIND = ("Current batch is falling behind. The trigger interval is 1000} milliseconds, "
                  "but spent 2678 milliseconds")
CANCEL_GROUP = ("Failed to cancel job group 0f8ff9c0-2068-4a32-b092-183cbc0a18a2. "
                "Cannot find active jobs for it.")


def settings():
    return logger_settings(LOG4J_CONF.read_text())


def test_the_falling_behind_warning_of_every_long_batch_is_off():
    assert settings()["org.apache.spark.sql.execution.streaming.ProcessingTimeExecutor"]["level"] == "error"


def test_only_the_cancel_job_group_line_of_the_dag_scheduler_is_dropped():
    dag = settings()["org.apache.spark.scheduler.DAGScheduler"]
    assert dag["level"] == "warn"  # its other warnings stay
    [fid] = {key.split(".")[1] for key in dag if key.startswith("filter.")}
    assert dag[f"filter.{fid}.type"] == "RegexFilter"
    assert (dag[f"filter.{fid}.onMatch"], dag[f"filter.{fid}.onMismatch"]) == ("DENY", "NEUTRAL")
    regex = re.compile(dag[f"filter.{fid}.regex"])  # log4j2's RegexFilter: the whole message matches
    assert regex.fullmatch(CANCEL_GROUP)
    assert not regex.fullmatch("Broadcasting large task binary with size 1.2 MiB")
    assert not regex.fullmatch(FALLING_BEHIND)


def test_the_parser_reads_every_logger_of_the_file_with_its_level():
    quiet = settings()
    assert len(quiet) == len(re.findall(r"^logger\.\w+\.name = ", LOG4J_CONF.read_text(), re.M))
    assert quiet["org.apache.hadoop.util.NativeCodeLoader"] == {"level": "error"}
    assert all("level" in s for s in quiet.values())


# Spark 4.0's HDFSBackedStateStoreProvider.loadMap, printed by every cdc-replicate restarted from
# its checkpoint (tests/integration/replicate/test_stopping.py saw it before this line).
FIRST_LOAD = ("The state for version 1 doesn't exist in loadedMaps. Reading snapshot file and delta files if "
              "needed...Note that this is normal for the first batch of starting query.")


def test_only_the_first_state_load_line_of_a_restart_is_dropped():
    store = settings()["org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"]
    assert store["level"] == "warn"
    regex = re.compile(store["filter.firstload.regex"])
    assert (store["filter.firstload.onMatch"], store["filter.firstload.onMismatch"]) == ("DENY", "NEUTRAL")
    assert regex.fullmatch(FIRST_LOAD)
    assert not regex.fullmatch("Error cleaning up files for version 12")


# Spark 4.0's TaskSetManager.prepareLaunchingTask warning, as a 60 s `scripts/dev run` printed it (issue #56
# item 6): the batch's change log built on the driver (conf/log4j2.properties says why).
LARGE_TASK = ("Stage 115 contains a task of very large size (1158 KiB). The maximum recommended task "
              "size is 1000 KiB.")


def test_only_the_large_task_line_of_the_task_scheduler_is_dropped():
    tasks = settings()["org.apache.spark.scheduler.TaskSetManager"]
    assert tasks["level"] == "warn"  # lost and failed tasks still say so
    regex = re.compile(tasks["filter.largetask.regex"])
    assert (tasks["filter.largetask.onMatch"], tasks["filter.largetask.onMismatch"]) == ("DENY", "NEUTRAL")
    assert regex.fullmatch(LARGE_TASK)
    assert not regex.fullmatch("Lost task 0.0 in stage 115.0 (TID 230) (localhost executor driver): "
                               "java.io.IOException: No space left on device")
