"""The routing key EduFair sends with every request of a dialogue, so that a router in front of
several replicas of one model keeps the dialogue on one replica, the one whose prefix cache holds
its earlier turns (vllm-router's ``sticky_least_loaded`` and ``consistent_hash`` policies route by
the ``X-Session-ID`` header; README, Scaling).

One key per question (its domain and id), shared by every dialogue of the question: all its
levels and replicates, and the tutor's, the student's and the judge's requests. Requests of
different dialogues share a prefix only within one question (the student's opening answer is one
request for all levels of a question, sent once), so a key per question keeps every shared prefix
on one replica, where a key per level would send the other levels' next turns elsewhere; a task
still spreads over as many keys as it has questions. The key travels as an HTTP header only: it
is no part of any request body, cache key or record, so it cannot change a transcript.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping

# vllm-router's first choice of routing key (its session policies); other routers and plain
# OpenAI-compatible servers ignore an unknown header.
SESSION_HEADER = "X-Session-ID"


def session_key(domain: Any, question_id: Any) -> str:
    """The routing key of every request of the dialogues of one question (stable across runs,
    processes and hosts: a digest of the domain and question id, nothing else)."""
    digest = hashlib.sha256(json.dumps([str(domain), str(question_id)]).encode()).hexdigest()
    return f"edufair-{digest[:20]}"


def session_key_of(source: Mapping[str, Any] | Any) -> str | None:
    """The key of a lm-eval document (a mapping) or a transcript (an object with ``domain`` and
    ``question_id``); None when it names no question (a request then goes without a key)."""
    if isinstance(source, Mapping):
        domain, qid = source.get("domain"), source.get("question_id")
    else:
        domain, qid = getattr(source, "domain", None), getattr(source, "question_id", None)
    if qid is None or qid == "":
        return None
    return session_key(domain if domain is not None else "", qid)
