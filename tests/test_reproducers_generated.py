"""Generated reproducers verified on the real release (each script in its own subprocess),
their runs stored, and the endpoint and record page showing them as generated, verified
only when the run passed."""

import pytest
from sqlmodel import Session

from app.reproducers import generated
from tests.helpers import generated as helper

pytestmark = pytest.mark.network  # torch installed, vLLM downloaded with its environment


def test_generated_scripts_run_on_the_real_release_and_are_served_as_generated(
    settings, tmp_path, make_client
):
    engine = helper.harvested_store(settings, tmp_path, helper.TORCH_SGD, helper.VLLM_SAMPLING)
    made, figures = generated.generate_scripts(engine, settings)
    optimizer = [m for m in made if m.package == "torch"]
    temperature = next(m for m in made if m.trigger_call.startswith("SamplingParams(temp"))
    sample = [*optimizer, temperature]
    outcomes, figures = generated.verify_scripts(
        engine, settings, [m.record_id for m in sample], workers=2, figures=figures
    )
    by_id = {outcome.record_id: outcome for outcome in outcomes}
    assert set(by_id) == {m.record_id for m in sample}
    for script in optimizer:  # torch's own checks: trigger and fix both hold
        outcome = by_id[script.record_id]
        assert outcome.status == "passed", outcome.reason
        assert outcome.result["fix"]["state"]["raiseRan"] is False
    assert figures["pytorch/pytorch"].verified == len(optimizer)
    # vLLM's check really raised at the site, whatever the record's pattern says of it
    sampled = by_id[temperature.record_id].result["trigger"]
    assert sampled["errorClass"] == "VLLMValidationError"
    assert sampled["message"].startswith("temperature must be non-negative, got -")
    with Session(engine) as session:
        counts = generated.verified_counts(session)
    passed = [o for o in outcomes if o.status == "passed"]
    assert counts == {"generated": len(made), "verified": len(passed)}

    client = make_client()
    lr = optimizer[0]
    answer = client.get(f"/api/errors/{lr.record_id}/reproducer").json()
    assert answer["generated"] is True
    assert answer["calls"]["triggerCall"] == lr.trigger_call
    assert answer["script"] == lr.script
    assert answer["runs"][0]["status"] == "passed"
    page = client.get(f"/errors/{lr.record_id}").text
    assert "Reproduced on torch 2.13.0:" in page
    twin = client.get(f"/api/errors/{lr.record_id}").json()
    assert twin["generated"]["fixCall"] == lr.fix_call
    page = client.get(f"/errors/{temperature.record_id}").text
    verified = by_id[temperature.record_id].status == "passed"
    assert ("Reproduced on vllm 0.33.0:" in page) is verified
    assert ("not verified" in page) is not verified
    charts = client.get("/api/stats/charts").json()
    assert charts["reproducerCounts"]["verified"] == len(passed)


def test_a_record_without_any_reproducer_is_still_not_found(settings, tmp_path, make_client):
    engine = helper.harvested_store(settings, tmp_path, helper.TORCH_SGD)
    with Session(engine) as session:
        drafts = generated.draft_sites(session)
    client = make_client()
    answer = client.get(f"/api/errors/{drafts[0].site.record_id}/reproducer")
    assert answer.status_code == 404
