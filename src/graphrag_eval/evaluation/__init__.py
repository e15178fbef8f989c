"""Running an evaluation: the plan of each item, its scoring and the runner
(docs/architecture.md, "The data flow")."""
