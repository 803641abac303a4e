-- Chain checkpoints: the sealed head's (position, hash) at regular intervals, written
-- by the sealer every `CHAIN_CHECKPOINT_EVERY` positions and by `sandboxctl events
-- checkpoint`. An auditor copies them elsewhere; `sandboxctl events verify` checks the
-- recomputed chain against every one of them, which catches a rewritten chain (an
-- edit followed by recomputed hashes) and a truncated tail, which the chain alone
-- cannot show.
CREATE TABLE chain_checkpoints
(
    position   bigint PRIMARY KEY,
    chain_hash bytea       NOT NULL,
    taken_at   timestamptz NOT NULL DEFAULT now()
);
