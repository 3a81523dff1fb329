"""The loggers conf/log4j2.properties quiets, read from the file (log4j2's properties format:
`logger.<id>.name = <logger>`, then `logger.<id>.<setting> = <value>`). `cdc-replicate --verbose`
sets them back to WARN (pipelines/job/spark_session.py spark_warnings_on); the tests check each
line the file means to silence against its setting."""
from __future__ import annotations


def logger_settings(text: str) -> dict[str, dict[str, str]]:
    """{logger name: {setting: value}}, e.g. {"org.apache.spark.util.Utils": {"level": "error"}};
    a filter's settings keep their path ("filter.<id>.regex"). Comments and other keys are skipped."""
    by_id: dict[str, dict[str, str]] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", "!")) or "=" not in line:
            continue
        key, value = (part.strip() for part in line.split("=", 1))
        parts = key.split(".", 2)
        if parts[0] == "logger" and len(parts) == 3:
            by_id.setdefault(parts[1], {})[parts[2]] = value
    return {settings.pop("name"): settings for settings in by_id.values() if "name" in settings}
