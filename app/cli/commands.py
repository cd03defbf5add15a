"""The `errkb` command: db, import, export, serve, match, search, show, run, explain, harvest,
verify, drift, curate, runs; each builds its settings once and hands them down. The commands
live in one module per group; here each takes its name and its place in the help."""

import typer

from app.cli import answering, curate, harvest, reproducers, serve, store
from app.cli.options import configure

app = typer.Typer(
    help="errkb: error knowledge for ML-serving infrastructure.", no_args_is_help=True
)
db_app = typer.Typer(help="Database maintenance.", no_args_is_help=True)
app.add_typer(db_app, name="db")
runs_app = typer.Typer(help="Reproducer runs made elsewhere.", no_args_is_help=True)
app.add_typer(runs_app, name="runs")

app.callback()(configure)
# The help lists each group's commands in the order they are named here, then the groups.
db_app.command("upgrade")(store.db_upgrade)
db_app.command("copy")(store.db_copy)
runs_app.command("import")(reproducers.runs_import_command)
runs_app.command("keep")(reproducers.runs_keep_command)
app.command("import")(store.import_command)
app.command("export")(store.export_command)
app.command("match")(answering.match_command)
app.command("search")(answering.search_command)
app.command("show")(answering.show_command)
app.command(
    "run",
    context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True},
)(answering.run_command)
app.command("explain")(answering.explain_command)
app.command("serve")(serve.serve_command)
app.command("verify")(reproducers.verify_command)
app.command("drift")(reproducers.drift_command)
app.command("harvest")(harvest.harvest_command)
app.command("curate")(curate.curate_command)


def main() -> None:
    """Console-script entry point."""
    app()
