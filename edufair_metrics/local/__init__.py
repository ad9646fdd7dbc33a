"""The embedded offline default: a llama.cpp server with SmolLM2-135M on loopback, and ``edufair demo``."""
