"""The file layer: reading and writing documents within limits, checking that a file is text,
and one run per output directory (docs/architecture.md, "The packages and modules")."""
