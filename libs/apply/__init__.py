"""The apply stage's write path, decided without Spark (DESIGN.md "Cost follows the changes",
"Tables stay healthy unattended"): which stored rows a batch's MERGE may match
(merge_scope.py) and when a table is compacted or vacuumed (maintenance.py). The Spark side
that carries these decisions out is pipelines/apply/."""
