"""Per-event cost of Progress.event (libs/shipper/progress.py), before (time.time() per event)
and after (the clock read only when the event's timestamp second changes), interleaved in one
process: best of 7 repeats x 200 passes over the 403 frames of the MariaDB corpus file
row_full/mdb-bin.000001 (2 distinct timestamps, as in a stream of ~1000 events/s).

    .venv/bin/python bench/progress_event.py
"""
import io
import time
import timeit

from libs.binlog import iter_frames
from libs.runtime.paths import CORPUS_DIR
from libs.shipper.progress import Progress


class Before(Progress):
    def event(self, file, pos, frame):  # the code before this change
        self.total += 1
        self._window += 1
        self.last_file, self.last_pos = file, pos + len(frame)
        ts = int.from_bytes(frame[0:4], "little")
        if ts:
            self.last_event_ts = ts
            self.commit_to_kafka_s = max(0.0, time.time() - ts)


data = (CORPUS_DIR / "mariadb/row_full/mdb-bin.000001").read_bytes()
frames = list(iter_frames(data, file="mdb-bin.000001"))
n = len(frames)
def bench(cls):
    ev = cls("s", out=io.StringIO()).event
    def run():
        for pos, f in frames:
            ev("mdb-bin.000001", pos, f)
    return min(timeit.repeat(run, number=200, repeat=7)) / (200 * n) * 1e9
for _ in range(3):
    print(f"before {bench(Before):.0f} ns/event, after {bench(Progress):.0f} ns/event")
