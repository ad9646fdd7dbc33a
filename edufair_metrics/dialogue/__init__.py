"""Stage 2, the dialogue runner: per-dialogue state, the stop rule, the turn loop and the cached,
failure-isolating model calls. Free of lm-eval: the models come in through the
``ChatModel`` interface, which ``edufair_metrics.lmeval`` implements for lm-eval's LMs."""

from edufair_metrics.dialogue.state import DialogueState, strip_reasoning
from edufair_metrics.dialogue.stop import stop_after_tutor_turn

__all__ = ["DialogueState", "stop_after_tutor_turn", "strip_reasoning"]
