# Targets outside `all`: paper links (`snakemake papers_all`) and the benchmark runs
# (`snakemake eval_all`, for the corpora that have a `benchmarks` entry in the config).


rule papers_library:
    input:
        sources=lambda w: papers_sources(),
    output:
        library="embeddings/papers/library.sqlite",
    params:
        settings=settings_arg,
    log:
        "embeddings/papers/logs/import.log",
    benchmark:
        "embeddings/papers/benchmarks/import.tsv"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../envs/codeteacher.yaml"
    shell:
        "codeteacher papers import {input.sources} --library {output.library}"
        " --settings {params.settings} > {log} 2>&1"


rule papers:
    input:
        stamp=index_stamp("{corpus}"),
        library="embeddings/papers/library.sqlite",
    output:
        links=work("{corpus}", "paper_links.stamp"),
    params:
        index=lambda w, output: index_dir(w.corpus),
        settings=settings_arg,
        sections=sections_hash("papers"),
    log:
        log_file("{corpus}", "papers"),
    benchmark:
        bench_file("{corpus}", "papers")
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../envs/codeteacher.yaml"
    shell:
        "codeteacher papers build --index {params.index} --library {input.library}"
        " --settings {params.settings} > {log} 2>&1 && touch {output.links}"


rule eval:
    input:
        unpack(lambda w: bench_files(w.corpus)),
        stamp=index_stamp("{corpus}"),
    output:
        # the scores file, not the run folder: Snakemake deletes a job's outputs before it runs,
        # and answers.json in that folder is what lets an interrupted run resume
        scores="embeddings/{corpus}/eval/scores.json",
    params:
        run=lambda w, output: os.path.dirname(output.scores),
        index=lambda w, output: index_dir(w.corpus),
        settings=settings_arg,
        sections=sections_hash("eval"),
    log:
        log_file("{corpus}", "eval"),
    benchmark:
        bench_file("{corpus}", "eval")
    threads: 2
    resources:
        mem_mb=8000,
        runtime=240,
    conda:
        "../envs/codeteacher.yaml"
    shell:
        "codeteacher eval --questions {input.questions} --references {input.references}"
        " --index {params.index} --out {params.run} --settings {params.settings} > {log} 2>&1"


rule papers_all:
    input:
        expand(rules.papers.output.links, corpus=CORPORA),


rule eval_all:
    input:
        expand(rules.eval.output.scores, corpus=[c for c in CORPORA if c in config["benchmarks"]]),
