"""The local driver JVM's class archive (pipelines/jvm_archive.py): which flags a session's JVM
gets, and that an archive the JVM cannot use costs nothing and prints nothing (a job's stop is
one line on stderr, README "Errors")."""
import subprocess

from pipelines.job.spark_session import SessionOptions, class_archive_options, storage_confs

QUIET = "-Xlog:cds=off,cds+dynamic=off"


def test_a_present_archive_is_mapped_quietly_beside_the_log4j_option(tmp_path):
    archive = tmp_path / "classes.jsa"
    archive.write_bytes(b"x")
    options = storage_confs(SessionOptions(class_archive=archive))["spark.driver.extraJavaOptions"].split()
    assert options[-2:] == [f"-XX:SharedArchiveFile={archive}", QUIET]
    assert any(o.startswith("-Dlog4j2.configurationFile=") for o in options)


def test_no_archive_no_flag_and_a_training_run_dumps_instead(tmp_path):
    assert class_archive_options(SessionOptions(class_archive=tmp_path / "absent.jsa")) == []
    assert class_archive_options(SessionOptions(class_archive=None)) == []
    dump = tmp_path / "new.jsa"
    assert class_archive_options(SessionOptions(dump_classes_to=dump)) == [
        f"-XX:ArchiveClassesAtExit={dump}", QUIET]


def test_the_jvm_ignores_an_archive_it_cannot_use_without_a_word(tmp_path):
    bad = tmp_path / "garbage.jsa"
    bad.write_bytes(b"not a class-data archive\n" * 100)
    plain = subprocess.run(["java", "-version"], capture_output=True, text=True)
    quiet = subprocess.run(["java", f"-XX:SharedArchiveFile={bad}", QUIET, "-version"],
                           capture_output=True, text=True)
    assert quiet.returncode == 0
    # the same lines as a plain JVM's; only "sharing" (of the JDK's own base archive) may go
    assert ((quiet.stdout, quiet.stderr.replace(", sharing)", ")"))
            == (plain.stdout, plain.stderr.replace(", sharing)", ")")))
