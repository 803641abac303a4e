-- The pricing envelope (the pricing projection): the operator's price per region
-- and each company's budget; and the hold each run places against its budget
-- (the runs projection; NULL when its company had no budget).
CREATE TABLE region_prices
(
    region                   text PRIMARY KEY,
    currency                 text   NOT NULL,
    vcpu_second_micros       bigint NOT NULL,
    memory_gib_second_micros bigint NOT NULL
);

CREATE TABLE company_budgets
(
    company_id    uuid PRIMARY KEY,
    currency      text        NOT NULL,
    amount_micros bigint      NOT NULL,
    window_days   bigint      NOT NULL,
    starts_at     timestamptz NOT NULL
);

ALTER TABLE runs ADD COLUMN hold_amount bigint, ADD COLUMN hold_rate bigint;
CREATE INDEX runs_company_holds ON runs (company_id, queued_at) WHERE hold_amount IS NOT NULL;
