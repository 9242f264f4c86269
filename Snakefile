# codeteacher workflow: builds embeddings/<corpus>/index for every corpus in the config.
#   snakemake --profile profiles/local              # laptop / workstation
#   snakemake --profile slurm                       # SLURM cluster (see slurm/config.yaml)
#   snakemake --profile profiles/local eval_all     # also: papers_all
# workflow/README.md describes the rules, the config and the caching.

import re

from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"


wildcard_constraints:
    corpus="|".join(re.escape(c) for c in CORPORA),
    shard=r"\d+",


include: "workflow/rules/pipeline.smk"
include: "workflow/rules/explain.smk"
include: "workflow/rules/index.smk"
include: "workflow/rules/extras.smk"


rule all:
    input:
        expand(index_stamp("{corpus}"), corpus=CORPORA),
    default_target: True
