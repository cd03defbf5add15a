"""The web pages of errkb: Jinja2 templates and static files."""
