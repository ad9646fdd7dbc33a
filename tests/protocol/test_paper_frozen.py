"""The paper's nine tasks are frozen: their YAMLs, every document they produce (system prompts, ids,
gold) and what a paper task records as its protocol (``protocol_hash()``, ``PROTOCOL_VERSION``) must
stay byte-identical whatever is added beside them (the extension conditions live in
``protocol-extensions.yaml`` with their own version, so that paper runs keep their hash and still
pool with older runs). The digests below were taken before any extension existed; a change here
means the paper's protocol changed, which needs a new ``PROTOCOL_VERSION`` instead."""

from __future__ import annotations

import hashlib
import json

import pytest
import yaml

from edufair_metrics import PROTOCOL_VERSION
from edufair_metrics.protocol import protocol_hash
from edufair_metrics.run import RoleModel, TaskSpec, run_task, task_documents
from edufair_metrics.settings import resolve_runner_settings
from lm_eval_tasks import TASKS_DIR

from tests.helpers.fake_chat import JsonChatModel
from tests.helpers.fake_lms import default_student, default_tutor

DOMAINS = {"math": "mathematics", "physics": "physics", "chemistry": "chemistry"}
# task -> (sha256 of its YAML, sha256 of its documents as canonical JSON, number of documents)
FROZEN_TASKS = {
    "edufair_explicit_math": ("152362e78809d22619c90cc4aad81d08e4c0861dd2be66cf10513f2981a82c8a",
                              "701e53030ae156ff5993e75fea26ba38f6e4ffc0a72c748db94d308c9d89d36f", 8163),
    "edufair_explicit_physics": ("2f6a367be31fd5933f9ffe179aacf3f2acdfd31ae54fba8f76878cc1fb615e69",
                                 "a7a32fc1e3f68abf17e04deda92756f12170d59b3524a2334b4f0b8926d0a456", 4500),
    "edufair_explicit_chemistry": ("3ed986a67ab4fabc84b88286e5a5d50f5b4c2d8593c6b1f7c41466eb2f51399a",
                                   "62f102f9e227e1f2d0cfbfd318233a48d1da73dcae0f09206988acfdac90a869", 4500),
    "edufair_implicit_math": ("05ae1f9c0cdd1460e02cd697d9a3e9b8706bef197da27259541dd728d8a86952",
                              "b051ca06cdeeecb13ba0bd186f7a05ab0efc2eaa2ce4861ecb261bced96c0c59", 3628),
    "edufair_implicit_physics": ("d7958672592f50d9edf10ddf492cb86aafd088569d511e58f90911ab5e5cd2d3",
                                 "66d7face138c9920a0b245c1ffc4067be96fcb65e40f8ac4ae280808842fc49e", 2000),
    "edufair_implicit_chemistry": ("d19a1c2a30ea8a58cf7b9278507900fd3b0f14789bcfb973c9f89b309f0dd8a4",
                                   "730daf5a08fe8d6b35c51f10ae6bb398c80ac3e7ad00af59d49dfcf06a60f7e0", 2000),
    "edufair_opposite_math": ("855babb51c3b504f8ec564bc2c424c8028546b57956dc498266f30bdbf418d9f",
                              "137f60e1d176a593153c9f9447947815812a2eadfd41c1745672e8ddd35a47e4", 3628),
    "edufair_opposite_physics": ("78338be16a949a9abcadd3bc11e6ca3f52360d614370e5b526cea66fb36c617e",
                                 "50c1ebfa70f9f7889a335a51262be6be9e03079b21ce7724e2b838c0a6bf1442", 2000),
    "edufair_opposite_chemistry": ("70bcc142df9cbdd5bd181d7c9c88adb16c3ecea0f852914c211eb6294425f852",
                                   "15144d5217c7a6e12417282642bd80f23b0e2877eaa7f117829d556933a69af8", 2000),
}
# the shared template and the paper's groups, which every paper task reads (the template re-frozen
# once, after main renamed its lm-eval metric rows: edufair_record -> complete_dialogues,
# edufair_calls -> failed_call_attempts, conversation metrics without a direction; its edufair:
# block, the documents and the protocol are unchanged)
FROZEN_FILES = {
    "_edufair_template_yaml": "c17522013e961c21a851ad7e3a472d47c654564a0df614762900e4e6941c1f13",
    "edufair.yaml": "c42eb2349a2abea4d556d2339fe95634c46f2c621bca58eea25508a0ab76c6a9",
    "edufair_explicit.yaml": "c5c872415f8558bf0baf7e52cd351da1251b6acb3110eba7833752ecbd7b88e1",
    "edufair_implicit.yaml": "cb828a5aaa9bb5132175ba5c74f9cb6bf0bdff31292059da0c99887ce7789bb8",
    "edufair_opposite.yaml": "cadbb336793f0eca48953c7ebdea7687ece81706c592cdd3d93fee8f71ae930e",
}
FROZEN_PROTOCOL_HASH = "03871360015d7e00a65a46e11be676a5cb27f8d15c37cca2cb002062fb8beae9"
FROZEN_PROTOCOL_VERSION = "edufair-bench-2"
# what a paper task's record and its provenance hold (nothing an extension adds); the record's keys are
# record schema v3's (the run header, the provenance delta, the scorers' stamps and per-turn output)
FROZEN_PROVENANCE_KEYS = ["bank", "decoding", "judge_prompts_sha256", "max_tutor_turns", "models", "package_version",
                          "protocol_sha256", "protocol_version", "seeds"]
FROZEN_RECORD_KEYS = ["document", "flags", "judge", "judgements", "per_turn", "provenance", "run", "schema_version",
                      "scorers", "scores", "transcript"]
FROZEN_SCORERS = ["conversation", "detectors", "judge", "student"]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _template():
    return yaml.safe_load((TASKS_DIR / "_edufair_template_yaml").read_text(encoding="utf-8").replace("!function", ""))


def _settings(**extra):
    meta = {"edufair": {"judge": {"enabled": False}, "preflight": False, **extra}}
    return resolve_runner_settings(_template()["edufair"], meta)


@pytest.mark.parametrize("name", sorted(FROZEN_FILES))
def test_template_and_groups_are_frozen(name):
    assert _sha((TASKS_DIR / name).read_bytes()) == FROZEN_FILES[name], name


@pytest.mark.parametrize("task", sorted(FROZEN_TASKS))
def test_paper_task_yaml_and_documents_are_frozen(task):
    yaml_sha, docs_sha, n_docs = FROZEN_TASKS[task]
    assert _sha((TASKS_DIR / f"{task}.yaml").read_bytes()) == yaml_sha
    _, condition, domain = task.split("_")
    docs = task_documents(task, condition, DOMAINS[domain], _settings()).documents
    assert len(docs) == n_docs
    assert _sha(json.dumps(docs, sort_keys=True, ensure_ascii=False).encode()) == docs_sha


def test_protocol_hash_and_version_are_frozen():
    assert protocol_hash() == FROZEN_PROTOCOL_HASH
    assert PROTOCOL_VERSION == FROZEN_PROTOCOL_VERSION


class _Scripted(JsonChatModel):
    def __init__(self, respond):
        self.respond = respond

    def generate(self, contexts, gen_kwargs, docs, on_answer=None, retry=False):
        return [self.respond(json.loads(c)) for c in contexts]


def test_a_paper_task_records_the_paper_protocol(bank_dir):
    settings = _settings(bank_dir=str(bank_dir), max_tutor_turns=1)
    task = "edufair_explicit_physics"
    found = task_documents(task, "explicit", "physics", settings)
    result = run_task(TaskSpec(task, "explicit", "physics", _template()["generation_kwargs"], bank_file=found.bank_file),
                      settings, found.documents,
                      tutor=RoleModel(_Scripted(default_tutor), {"kind": "scripted", "model_args": {}}),
                      student=RoleModel(_Scripted(default_student), {"kind": "scripted-student", "model_args": {}}),
                      judge=None, cache=None, progress=False)
    for record in result.records:
        prov = record.provenance
        assert prov["protocol_version"] == FROZEN_PROTOCOL_VERSION
        assert prov["protocol_sha256"] == FROZEN_PROTOCOL_HASH
        assert sorted(prov) == FROZEN_PROVENANCE_KEYS
        stored = record.to_dict()
        assert sorted(stored) == FROZEN_RECORD_KEYS and sorted(stored["scorers"]) == FROZEN_SCORERS
        assert sorted(stored["run"]) == FROZEN_PROVENANCE_KEYS and stored["provenance"] == {}  # no delta of its own
