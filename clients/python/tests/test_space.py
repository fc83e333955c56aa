"""The search-space builder: the Vertex form it writes, read back, and the mistakes it refuses."""
import pytest

import bo_client as bo


def tree() -> bo.SearchSpace:
    space = bo.SearchSpace()
    optimizer = space.categorical("optimizer", ["sgd", "adam"])
    sgd = optimizer.when("sgd")
    sgd.float("momentum", 0.0, 0.99)
    schedule = sgd.categorical("schedule", ["constant", "cosine"])
    schedule.when("cosine").integer("warmup", 0, 1000)
    optimizer.when("adam").float("beta1", 0.8, 0.999)
    space.float("learning_rate", 1e-5, 0.1, log=True)
    layers = space.integer("layers", 1, 8)
    layers.when(4, 8).discrete("width", [64, 128, 256])
    return space


def test_it_writes_vertex_parameters_with_nested_children() -> None:
    specs = tree().to_vertex()
    assert [s["parameterId"] for s in specs] == ["optimizer", "learning_rate", "layers"]
    opt = specs[0]
    assert opt["categoricalValueSpec"] == {"values": ["sgd", "adam"]}
    conds = opt["conditionalParameterSpecs"]
    assert [c["parentCategoricalValues"]["values"] for c in conds] == [["sgd"], ["sgd"], ["adam"]]
    assert [c["parameterSpec"]["parameterId"] for c in conds] == ["momentum", "schedule", "beta1"]
    warmup = conds[1]["parameterSpec"]["conditionalParameterSpecs"][0]
    assert warmup["parentCategoricalValues"] == {"values": ["cosine"]}
    assert warmup["parameterSpec"]["integerValueSpec"] == {"minValue": "0", "maxValue": "1000"}
    assert specs[1]["scaleType"] == "UNIT_LOG_SCALE"
    assert specs[2]["conditionalParameterSpecs"][0]["parentIntValues"] == {"values": ["4", "8"]}


def test_it_reads_back_what_it_wrote() -> None:
    space = tree()
    again = bo.SearchSpace.from_vertex(space.to_vertex())
    assert again.to_vertex() == space.to_vertex()
    assert again.names() == ["optimizer", "momentum", "schedule", "warmup", "beta1", "learning_rate", "layers", "width"]
    assert again.active({"optimizer": "sgd", "schedule": "cosine", "layers": 2}) == [
        "optimizer", "momentum", "schedule", "warmup", "learning_rate", "layers"]


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda s: s.float("x", 1.0, 1.0), "low < high"),
        (lambda s: s.float("x", 0.0, 1.0, log=True), "log scale needs low > 0"),
        (lambda s: s.float("x", 0.0, float("nan")), "finite"),
        (lambda s: s.integer("x", 3, 1), "low <= high"),
        (lambda s: s.categorical("x", []), "at least one value"),
        (lambda s: (s.float("x", 0, 1), s.integer("x", 0, 1)), "already in the search space"),
        (lambda s: s.categorical("c", ["a"]).when("b"), "'b' is not one of"),
        (lambda s: s.float("d", 0, 1).when(0.5), "cannot have children"),
        (lambda s: s.categorical("c", ["a"]).when("a").float("c", 0, 1), "already in the search space"),
    ],
)
def test_it_refuses_mistakes_at_once(build, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=message):
        build(bo.SearchSpace())
