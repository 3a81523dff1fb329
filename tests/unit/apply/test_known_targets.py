"""KnownTargets.forget (pipelines/apply/known_targets.py): a table about to be removed (an online
schema change tool's working table, pipelines/apply/shadow_writes.py) leaves nothing behind that
a later step would ask Delta about, such as the Delta version of a retried batch found committed
on it (BatchWrites asks batch_versions.of_batch for every found_committed table)."""
from libs.tables.table_location import TableLocation
from pipelines.apply.known_targets import KnownTargets


def test_forget_leaves_nothing_of_the_table_and_keeps_the_others():
    known = KnownTargets("app", mirror_max_rows=10)
    gone, kept = TableLocation(path="/d/shop___t_old"), TableLocation(path="/d/shop__t")
    for path, name in ((gone, "shop___t_old"), (kept, "shop__t")):
        known.ready.add(path)
        known.schema_checked.add(path)
        known.unmirrored.add(path)
        known.mirrors[path] = object()
        known.written[path] = 7
        known.found_committed[path] = (name, 7)
    known.forget(gone)
    caches = (known.ready, known.schema_checked, known.unmirrored,
              known.mirrors, known.written, known.found_committed)
    assert [gone in cache for cache in caches] == [False] * 6
    assert [kept in cache for cache in caches] == [True] * 6
