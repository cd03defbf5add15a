"""What an operator needs of every request: metrics, request ids, JSON logs, the HTTP
protocol's limits, a settled heap."""
