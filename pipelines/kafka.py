"""cdc-kafka start|stop|status: the project's local single-node Kafka broker (KRaft)."""
from __future__ import annotations

import argparse
import json
import sys

from libs.local.kafka_broker import DEFAULT_PORT, BrokerConfig, BrokerError, start, status, stop
from libs.runtime.paths import KAFKA_JARS_DIR, RUN_DIR


def broker_config(port: int = DEFAULT_PORT, data_dir: str | None = None) -> BrokerConfig:
    from pathlib import Path

    return BrokerConfig(jars_dir=KAFKA_JARS_DIR,
                        data_dir=Path(data_dir) if data_dir else RUN_DIR / f"kafka-{port}", port=port)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="cdc-kafka", description=__doc__)
    ap.add_argument("action", choices=["start", "stop", "status"])
    ap.add_argument("--port", type=int, default=DEFAULT_PORT,
                    help="client port on 127.0.0.1 (controller: port+1)")
    ap.add_argument("--data-dir", help="broker data directory (default .run/kafka-PORT)")
    args = ap.parse_args(argv)
    cfg = broker_config(args.port, args.data_dir)
    try:
        if args.action == "start":
            st = start(cfg)
            print(st["bootstrap"])  # the bootstrap address, for scripts: BOOT=$(cdc-kafka start)
            print(f"kafka broker {'already running' if st['already_running'] else 'started'} "
                  f"(pid {st['pid']}, data {cfg.data_dir})", file=sys.stderr)
        elif args.action == "stop":
            print("stopped" if stop(cfg) else "not running")
        else:
            st = status(cfg)
            print(json.dumps(st))
            return 0 if st["running"] else 3
    except BrokerError as e:
        print(f"cdc-kafka: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
