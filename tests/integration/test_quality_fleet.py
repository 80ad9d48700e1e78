"""benchmarks/quality.py replays a fleet (issue 45 item 6): daily runs at the fleet's times, a node that joins later
decided from its class's data up to then (the class model at its maxPods, not the cold-start formula), classes.json,
and traces that carry pods and a class through --write-traces and --traces."""

from __future__ import annotations

import importlib.util
import json
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MIB, GIB, DAY = 1 << 20, 1 << 30, 86400
STEP = 300
MAX_PODS = 200


def _quality():
    spec = importlib.util.spec_from_file_location('quality', os.path.join(ROOT, 'benchmarks', 'quality.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _trace(name, start_day, days, phase):
    """A 128 GiB node of class 'general': exactly 500 MiB + 10 MiB a pod, its pods cycling 10 to 60 every 4 h 15 min."""
    times = list(range(int(start_day * DAY), int((start_day + days) * DAY), STEP))
    pods = [10 + (index + phase) % 51 for index in range(len(times))]
    return {'name': name, 'mem_total_bytes': 128 * GIB, 'cpus': 32, 'max_pods': MAX_PODS, 'node_class': 'general',
            't': times, 'pods': pods, 'non_pod_bytes': [(500 + 10 * count) * MIB for count in pods],
            'non_pod_millicores': [100] * len(times)}


@pytest.fixture(scope='module')
def replayed(tmp_path_factory):
    quality = _quality()
    traces = [_trace('a', 0, 5, 0), _trace('b', 0, 5, 7), _trace('joiner', 2.5, 2.5, 3)]
    out = str(tmp_path_factory.mktemp('decisions'))
    decisions = {}
    result = quality.run(traces, STEP, DAY, simple=False, decisions=decisions)
    quality.write_decisions(decisions, out)
    alone = quality.run([_trace('joiner', 2.5, 2.5, 3)], STEP, DAY, pool_class=False, simple=False,
                        decisions={})
    return quality, traces, result, out, alone


def _lines(out, name):
    with open(os.path.join(out, name + '.jsonl'), encoding='utf-8') as handle:
        return [json.loads(line) for line in handle]


def test_a_joining_node_is_decided_at_its_first_reading_from_its_class_then_at_the_fleets_runs(replayed):
    quality, traces, _result, out, _alone = replayed
    lines = _lines(out, 'joiner')
    assert lines[0]['t'] == traces[2]['t'][0] == 2.5 * DAY
    assert all(line['t'] % DAY == 0 for line in lines[1:])
    # Its class's line at its maxPods: 500 MiB + 10 MiB x 200 pods (the envelope a bucket's width of pods above it),
    # far below GKE's formula for 128 GiB, which the same node alone rests on (the cold-start prior).
    first = lines[0]['reserved_memory_bytes']
    assert 2500 * MIB <= first <= 2560 * MIB
    gke = quality._vendor_formulas.gke(128 * GIB, 32)['reserved_memory_bytes']
    assert first < gke / 3
    alone = quality.replay_measured(traces[2], STEP, DAY, quality.module_defaults())[0][0]
    assert alone >= gke


def test_classes_json_holds_the_model_and_the_template_at_every_daily_run(replayed):
    _quality_module, _traces, result, out, _alone = replayed
    with open(os.path.join(out, 'classes.json'), encoding='utf-8') as handle:
        classes = json.load(handle)
    runs = classes['general']
    assert [run['t'] for run in runs] == [day * DAY for day in range(5)]
    fitted = [run for run in runs if run['model'] and run['model']['slope_source'] == 'fit']
    assert fitted and all(run['model']['slope_bytes_per_pod'] == pytest.approx(10 * MIB, rel=0.01) for run in fitted)
    with_template = [run for run in runs if run['template']]
    # 3 node-days of readings are there from day 1.5 on: the day-2 run is the first with a template.
    assert with_template[0]['t'] == 2 * DAY
    assert all(run['template']['memory_bytes'] >= 2510 * MIB and run['template']['max_pods'] == MAX_PODS
               for run in with_template)
    fleet = result['fleet']['general']
    assert fleet['template_exceeded']['points'] == 0 and fleet['slope_source'] == 'fit'


def test_pods_and_the_class_survive_writing_and_reading_traces(tmp_path):
    quality = _quality()
    trace = _trace('a', 0, 1, 0)
    quality.write_traces([trace], str(tmp_path))
    (read,) = quality.read_traces(str(tmp_path))
    assert read['pods'] == trace['pods'] and read['node_class'] == 'general' and read['max_pods'] == MAX_PODS
    bad = tmp_path / 'bad'
    bad.mkdir()
    (bad / 'n.jsonl').write_text(json.dumps({'node': {'mem_total_bytes': GIB, 'cpus': 1, 'class': 'a\nb'}}) + '\n'
                                 + json.dumps({'t': 0, 'non_pod_bytes': 1}) + '\n')
    with pytest.raises(quality.TraceError, match='class'):
        quality.read_traces(str(bad))
