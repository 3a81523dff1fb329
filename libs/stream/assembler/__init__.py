"""Transaction assembler (DESIGN.md "Dataflow": assemble): WL#4162 boundaries -> COMPLETE
transactions, per source."""
from libs.stream.assembler.assembler import Assembler
from libs.stream.assembler.change_records import (
    iter_change_records, statement_op, statement_target, to_change_records,
)
from libs.stream.assembler.model import (
    AssembledInput, AssemblerConfig, AssemblerOutput, Frame, Quarantined, SpillRef, StreamGapError,
    Transaction, UnknownEventPolicy,
)
from libs.stream.assembler.spill import InMemorySpillStore, SpillStore, release
from libs.stream.assembler.state import STATE_FIELDS, AssemblerState, IdleAction, idle_action
from libs.stream.assembler.values import column_value

__all__ = [
    "Assembler", "AssembledInput", "AssemblerConfig", "AssemblerOutput", "AssemblerState", "Frame",
    "IdleAction", "InMemorySpillStore", "Quarantined", "STATE_FIELDS", "SpillRef",
    "SpillStore", "StreamGapError", "Transaction", "UnknownEventPolicy", "column_value", "idle_action",
    "iter_change_records", "release", "statement_op", "statement_target", "to_change_records",
]
