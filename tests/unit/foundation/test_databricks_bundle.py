"""databricks.yml: variables declared once, set per target, passed to cdc-replicate as flags."""
import re

import yaml

from libs.runtime.paths import REPO_ROOT

BUNDLE = yaml.safe_load((REPO_ROOT / "databricks.yml").read_text())


def test_bundle_has_name_dev_and_prod_targets():
    assert BUNDLE["bundle"]["name"] == "binlog-cdc"
    assert set(BUNDLE["targets"]) == {"dev", "prod"}
    assert BUNDLE["targets"]["dev"].get("default") is True


def test_every_variable_used_is_declared_and_every_required_one_is_set_per_target():
    text = (REPO_ROOT / "databricks.yml").read_text()
    used = set(re.findall(r"\$\{var\.(\w+)\}", text))
    declared = BUNDLE["variables"]
    assert used <= set(declared)
    required = {name for name, spec in declared.items() if "default" not in spec}
    for name, target in BUNDLE["targets"].items():
        assert required <= set(target.get("variables", {})), \
            f"target {name} misses {required - set(target['variables'])}"


def test_job_runs_the_cdc_replicate_entry_point_with_its_contract_flags():
    task = BUNDLE["resources"]["jobs"]["cdc_replicate"]["tasks"][0]["python_wheel_task"]
    assert task["entry_point"] == "cdc-replicate"
    setup_cfg = (REPO_ROOT / "setup.cfg").read_text()
    assert "cdc-replicate = pipelines.replicate:main" in setup_cfg
    flags = [p for p in task["parameters"] if p.startswith("--")]
    assert {"--bootstrap", "--topic", "--delta-root", "--checkpoint", "--target-ddl"} <= set(flags)


def test_cluster_sets_the_static_confs_the_local_session_sets():
    from pipelines.job.spark_session import CODEGEN_CACHE_ENTRIES

    cluster = BUNDLE["resources"]["jobs"]["cdc_replicate"]["tasks"][0]["new_cluster"]
    assert cluster["spark_conf"]["spark.sql.codegen.cache.maxEntries"] == str(CODEGEN_CACHE_ENTRIES)


def test_the_cluster_job_keeps_its_tables_in_a_catalog_schema_per_target():
    from libs.tables.table_location import parse_catalog_schema

    task = BUNDLE["resources"]["jobs"]["cdc_replicate"]["tasks"][0]["python_wheel_task"]
    flags = task["parameters"]
    assert flags[flags.index("--catalog-schema") + 1] == "${var.catalog_schema}"
    for target in BUNDLE["targets"].values():
        parse_catalog_schema(target["variables"]["catalog_schema"])


def test_the_catalog_schema_flag_reaches_the_job_configuration():
    from pipelines.replicate import job_config, parse_args

    cfg = job_config(parse_args(["--catalog-schema", "dev.cdc", "--delta-root", "/d"]))
    assert cfg.catalog_schema == "dev.cdc"
