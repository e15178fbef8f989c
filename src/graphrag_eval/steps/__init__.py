"""Steps evaluation: match rules (:mod:`.rules`), group matching (:mod:`.matching`), SPARQL
results comparison (:mod:`.sparql`), retrieval metrics (:mod:`.retrieval`) and time-series
argument matching (:mod:`.timeseries`)."""
