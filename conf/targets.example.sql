-- Example replica-side schema (target declarations as DDL). Load with
--   load_targets("conf/targets.example.yaml")  (listed under `ddl:` there)
-- or pass it as `--target-ddl conf/targets.example.sql`.
-- Column DEFAULTs here are the *slave-side* defaults used for columns absent from an
-- insert's after image (WL#5092 DEFAULT VALUES R1), not the source's.
CREATE DATABASE IF NOT EXISTS shop;
USE shop;

CREATE TABLE `orders` (
  `id` bigint(20) unsigned NOT NULL,
  `customer` varchar(64) NOT NULL,
  `status` enum('new','paid','shipped') NOT NULL DEFAULT 'new',
  `amount` decimal(12,2) NOT NULL DEFAULT 0.00,
  `note` text DEFAULT NULL,
  `created` timestamp NOT NULL DEFAULT current_timestamp(),
  `region` int(11) DEFAULT 900,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE shop.order_events (
  `order_id` bigint(20) unsigned NOT NULL,
  `kind` varchar(16) NOT NULL,
  `payload` json DEFAULT NULL
) ENGINE=InnoDB;
