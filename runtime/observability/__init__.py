"""What agentfn tells about its runs beyond the run store: traces (tracing, spans, otel)."""
