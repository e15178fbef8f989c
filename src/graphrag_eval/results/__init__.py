"""Results: the typed per-question results and aggregates, the output edge to and from the
seed's flat records, the output directory written and read back, and the checkpoint
(docs/architecture.md, "The data flow")."""
