"""The LLM graders' shared parts: rubrics, prompts, reading replies, calls, the reply cache, grading."""
