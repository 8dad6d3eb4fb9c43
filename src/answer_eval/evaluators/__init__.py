"""The evaluators and their one contract: options with a signature, roles, column-wise ``score``, a summary.

See :mod:`answer_eval.evaluators.base` for the contract and :mod:`answer_eval.evaluators.registry`
for the list every layer reads; one module per evaluator (a few for the typed and rubric ones, the
``judge`` subpackage for the judge) holds its rules and its contract class.
Nothing is imported here, so that importing one evaluator's rules stays cheap.
"""
