# LLM explanations: chunk explanations fanned out over `explain_shards` jobs per corpus, then one
# merge job that joins them and explains the file, module and call-chain levels. Both are GPU
# jobs when `gpu: true`. With the default settings (backend "none") each writes an empty file at
# once; with explain_shards: 0 neither is part of the workflow.


rule explain:
    input:
        chunks=work("{corpus}", "chunks.jsonl"),
        entities=work("{corpus}", "entities.jsonl"),
        structure=work("{corpus}", "project_structure.json"),
    output:
        shard=work("{corpus}", "explain/shard_{shard}.jsonl"),
    params:
        of=N_SHARDS,
        cache=cache_arg,
        settings=settings_arg,
        sections=sections_hash("explain"),
    log:
        log_file("{corpus}", "explain_{shard}"),
    benchmark:
        bench_file("{corpus}", "explain_{shard}")
    threads: 2
    resources:
        mem_mb=16000,
        runtime=240,
        **gpu_resources(),
    conda:
        "../envs/codeteacher.yaml"
    shell:
        "codeteacher stage explain --chunks {input.chunks} --entities {input.entities}"
        " --structure {input.structure} --shard {wildcards.shard} --of {params.of}"
        " --out {output.shard} --cache {params.cache} --settings {params.settings} > {log} 2>&1"


rule merge_explanations:
    input:
        shards=shard_files,
        chunks=work("{corpus}", "chunks.jsonl"),
        entities=work("{corpus}", "entities.jsonl"),
        structure=work("{corpus}", "project_structure.json"),
    output:
        explanations=work("{corpus}", "explanations.jsonl"),
    params:
        cache=cache_arg,
        settings=settings_arg,
        sections=sections_hash("merge_explanations"),
    log:
        log_file("{corpus}", "merge_explanations"),
    benchmark:
        bench_file("{corpus}", "merge_explanations")
    threads: 2
    resources:
        mem_mb=16000,
        runtime=240,
        **gpu_resources(),
    conda:
        "../envs/codeteacher.yaml"
    shell:
        "codeteacher stage merge-explanations {input.shards} --chunks {input.chunks}"
        " --entities {input.entities} --structure {input.structure}"
        " --out {output.explanations} --cache {params.cache} --settings {params.settings}"
        " > {log} 2>&1"
