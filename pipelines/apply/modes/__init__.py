"""Target modes, Spark half (the pure half and the protocol: libs/apply/modes/): plans.py makes a
replayed table's plan as its mode writes it; soft_delete.py and scd2.py hold their Delta writes."""
