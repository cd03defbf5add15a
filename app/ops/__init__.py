"""What an operator needs: metrics, request ids, JSON logs, readiness, the stats overview."""
