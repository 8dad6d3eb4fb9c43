"""Sub-commands of ``answer-eval``: each exposes a ``register(subparsers)`` function.

A ``register`` function adds the sub-command's parser and sets ``handler`` to a function that takes the
parsed arguments and returns an exit code. Raise :class:`answer_eval.errors.InputError` for bad
input; the front end prints it and exits with code 2.
"""
