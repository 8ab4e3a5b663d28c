"""`tilewave batch` in one process, with the real model on the CPU: every good item of a manifest written once,
its bad items recorded with their errors, a rerun writes nothing, and a run killed mid-way then resumed ends
with every item once, the same audio, and no partial file."""

import numpy as np
import pytest

from tests.distributed import manifests
from tests.distributed.helpers import (assert_same_audio, audio_files, batch_command, kill_after, partial_files,
                                       results, run_batch, snapshot)
from tilewave.distributed import Options, read_manifest, run_local
from tilewave.errors import InputError


def test_every_good_item_is_written_once_and_every_bad_one_recorded_with_its_error(manifest, reference):
    records = results(reference)
    assert [r["id"] for r in records] == [i.id for i in read_manifest(manifest)]  # one each, in manifest order
    files = audio_files(reference)
    assert sorted(files) == sorted(g["id"] for g in manifests.GOOD)
    for r in records:
        if r["id"] in manifests.BAD:
            assert r["status"] == "error" and manifests.BAD[r["id"]][1] in r["error"], r
            continue
        audio = files[r["id"]]
        assert r["status"] == "ok" and r["file"] == f"{r['id']}.wav" and r["phonemes"].strip()
        assert r["seconds"] == pytest.approx(audio.size / 24_000, abs=1e-3) and r["seconds"] > 0.3
        assert np.abs(audio).max() > 1000  # speech, not silence
        text = next(g["text"] for g in manifests.GOOD if g["id"] == r["id"])
        starts = [w["start"] for w in r["words"]]
        assert [w["word"] for w in r["words"]] == text.split() and starts == sorted(starts)  # word timestamps
        assert 0 <= starts[0] and r["words"][-1]["end"] <= r["seconds"]
    assert partial_files(reference) == []
    # each item its own words (a run that said one item for all would fail here)
    assert len({r["phonemes"] for r in records if r["status"] == "ok"}) == len(manifests.GOOD)


def test_a_second_run_writes_nothing_new(manifest, reference):
    before, log = snapshot(reference), (reference / "results.jsonl").read_text()
    summary = run_local(manifest, Options(str(reference)))
    assert (summary.written, summary.skipped, summary.failed) == (0, len(manifests.GOOD), len(manifests.BAD))
    assert snapshot(reference) == before and (reference / "results.jsonl").read_text() == log


def test_a_run_killed_mid_way_then_resumed_has_every_item_once_with_the_same_audio(manifest, reference, tmp_path):
    out = tmp_path / "out"
    # two items in flight: files come one batch at a time, so the kill lands between some of them
    kill_after(batch_command(manifest, out, "--in-flight", "2"), out, 3)
    killed = audio_files(out)  # each file there decodes whole
    assert 3 <= len(killed) < len(manifests.GOOD)
    resumed = run_batch(manifest, out)
    assert resumed.returncode == 3, resumed.stderr
    # a kill between a file's rename and its record makes that one item again
    skipped = int(resumed.stdout.split(" already done")[0].rsplit(", ", 1)[1])
    assert len(killed) - 1 <= skipped <= len(killed), resumed.stdout
    records = results(out)
    assert [r["id"] for r in records] == [r["id"] for r in results(reference)]
    assert partial_files(out) == []
    assert_same_audio(audio_files(out), audio_files(reference))


def test_a_manifest_that_cannot_be_read_is_refused_before_any_work(tmp_path):
    bad = tmp_path / "bad.jsonl"
    for text, message in (('{"id": "a", "text": "Hi."}\n{"id": "a", "text": "Bye."}\n', "same output file"),
                          ('{"id": "a", "text": "Hi."}\n{"id": "b"\n', "bad.jsonl:2 is not a JSON object"),
                          ('{"id": "a", "txt": "Hi."}\n', "beyond id, text")):
        bad.write_text(text)
        with pytest.raises(InputError, match=message):
            run_local(bad, Options(str(tmp_path / "out")))
    csv = tmp_path / "items.csv"
    csv.write_text("id,text,speed,seed\nc1,Hello.,1.5,7\nc2,Bye.,,\n")
    assert [(i.id, i.speed, i.seed) for i in read_manifest(csv)] == [("c1", 1.5, 7), ("c2", None, None)]
    folder = tmp_path / "texts"
    folder.mkdir()
    (folder / "chapter-1.txt").write_text("It begins.")
    assert [(i.id, i.text) for i in read_manifest(folder)] == [("chapter-1", "It begins.")]


def test_an_edited_item_is_made_again_and_retry_failed_tries_the_refused(manifest, reference):
    from tilewave.distributed.jobs import Job, model_identity

    job = Job(reference, "wav", model_identity(None))
    items = [i.filled(None, 1.0, None, "en-us") for i in read_manifest(manifest)]
    assert job.todo(items)[0] == []
    edited = [i if i.id != "g03" else type(i)(i.id, "Yes, of course not.", i.voice, i.speed, i.seed, i.lang)
              for i in items]
    reseeded = [i if i.id != "g05" else type(i)(i.id, i.text, i.voice, i.speed, 99, i.lang) for i in items]
    assert [i.id for i in job.todo(edited)[0]] == ["g03"]
    assert [i.id for i in job.todo(reseeded)[0]] == ["g05"]
    assert [i.id for i in Job(reference, "flac", job.model_id).todo(items)[0]] == [i.id for i in items]
    assert sorted(i.id for i in job.todo(items, retry_failed=True)[0]) == sorted(manifests.BAD)


def test_an_items_file_is_written_whole_and_readable_and_a_killed_writers_leftover_is_swept(tmp_path):
    from tilewave.distributed.jobs import PARTIAL, Item, Job

    job = Job(tmp_path, "wav")
    item = Item("a", "Hi.")
    stale = tmp_path / f".a.wav.x1y2z3{PARTIAL}"  # what a run killed mid-write leaves
    stale.write_bytes(b"half")
    assert job.todo([item])[0] == [item] and not stale.exists()
    name = job.write(item, np.zeros(240, dtype=np.float32), 24_000)
    assert [f.name for f in tmp_path.iterdir()] == [name] == ["a.wav"]
    assert (tmp_path / name).stat().st_mode & 0o777 == 0o644
    job.finish([item])
    assert sorted(f.name for f in tmp_path.iterdir()) == ["a.wav", "results.jsonl"]
    assert (tmp_path / "results.jsonl").stat().st_mode & 0o777 == 0o644
