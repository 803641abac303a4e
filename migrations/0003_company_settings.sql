-- Read model of company settings, kept by the `company_settings` projection.
CREATE TABLE company_settings
(
    company_id                        uuid PRIMARY KEY,
    recorded                          boolean NOT NULL,
    run_content_retention_days        integer NOT NULL,
    unreferenced_image_retention_days integer NOT NULL,
    allowed_regions                   text[]  NOT NULL,
    policy_version                    bigint  NOT NULL,
    limits                            jsonb   NOT NULL
);
