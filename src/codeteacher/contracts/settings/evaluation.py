"""Settings of `codeteacher eval` (the judge's backend lives in settings.generation.judge).

This module must not import codeteacher.settings (that module imports this one).
"""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class EvalSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    recall_ks: list[int] = Field(default=[5, 10], description="k values of evidence-file "
                                 "recall@k (share of gold files among the first k items).")
    coverage_words: int = Field(default=250, ge=1, description="Reference-token coverage looks "
                                "at this many leading words of the answer.")
    judge_prompt: str = Field(default="judge.txt", description="Judge prompt template: a file "
                              "name under src/codeteacher/prompts/ or a path.")
    judge_prompt_version: int = Field(default=1, description="Bump to re-judge every answer.")
    judge_max_answer_words: int = Field(default=400, ge=20, description="Answers are cut to "
                                        "this many words in the judge prompt (and further if "
                                        "the judge's context is too small).")
    judge_batch_size: int = Field(default=8, ge=1, description="Judge requests per backend "
                                  "call; verdicts are saved after each batch.")
