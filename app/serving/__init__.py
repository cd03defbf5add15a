"""What the JSON API and the pages share, below both: request dependencies and query
parameters, the record view, matches and record views as served, the paste budget."""
