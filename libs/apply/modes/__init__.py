"""Target modes, pure half (mode.py: the TargetMode protocol and the list of modes); their Spark
half: pipelines/apply/modes/. The write path asks select.mode_of(target)."""
