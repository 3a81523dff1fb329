"""Which server a stream comes from (pure): read once per connection, written on every record
(record.py server_identity header), compared on resume.

    MariaDB: SELECT @@server_id, @@gtid_domain_id  -> "mariadb server_id=2 gtid_domain_id=0"
    MySQL:   SELECT @@server_id, @@server_uuid     -> "mysql server_id=1 server_uuid=3e11fa47-..."

A binlog position (file:pos) means something on one server only. Two servers of one
replication topology never share a server_id (replication refuses it), so MariaDB servers are
told apart by server_id; a MySQL server by its server_uuid (generated at install). The
gtid_domain_id is recorded but not compared: changing it on a server does not change its binlog
files, so a file:pos resume stays valid.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

MARIADB, MYSQL = "mariadb", "mysql"
_TEXT = re.compile(r"^(mariadb|mysql)((?: [a-z_]+=\S+)+)$")


@dataclass(frozen=True)
class ServerIdentity:
    flavour: str  # MARIADB | MYSQL
    server_id: int
    gtid_domain_id: int | None = None  # MariaDB @@gtid_domain_id
    server_uuid: str | None = None     # MySQL @@server_uuid

    def text(self) -> str:
        fields = [("server_id", self.server_id), ("gtid_domain_id", self.gtid_domain_id),
                  ("server_uuid", self.server_uuid)]
        return " ".join([self.flavour] + [f"{k}={v}" for k, v in fields if v is not None])

    __str__ = text

    @staticmethod
    def parse(text: str) -> "ServerIdentity":
        """The text() form back; ValueError naming the expected form."""
        m = _TEXT.match(text.strip())
        fields = dict(f.split("=", 1) for f in m[2].split()) if m else {}
        if not m or not fields.get("server_id", "").isdigit():
            raise ValueError(f"not a server identity ('mariadb server_id=N gtid_domain_id=D' or "
                             f"'mysql server_id=N server_uuid=U'): {text!r}")
        domain = fields.get("gtid_domain_id")
        return ServerIdentity(m[1], int(fields["server_id"]),
                              int(domain) if domain is not None and domain.isdigit() else None,
                              fields.get("server_uuid"))

    def same_server(self, other: "ServerIdentity") -> bool:
        """Whether a binlog position read on `other` is valid on this server."""
        if self.flavour != other.flavour:
            return False
        if self.flavour == MYSQL:
            return self.server_uuid == other.server_uuid
        return self.server_id == other.server_id


def read_identity(conn, mariadb: bool) -> ServerIdentity:
    """The connected server's identity (one query on `conn`, a PyMySQL connection)."""
    with conn.cursor() as cur:
        if mariadb:
            cur.execute("SELECT @@server_id, @@gtid_domain_id")
            server_id, domain = cur.fetchone()
            return ServerIdentity(MARIADB, int(server_id), gtid_domain_id=int(domain))
        cur.execute("SELECT @@server_id, @@server_uuid")
        server_id, uuid = cur.fetchone()
        return ServerIdentity(MYSQL, int(server_id), server_uuid=str(uuid))
