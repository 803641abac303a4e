//! Every machine error code the service can answer, as one typed enum.
//!
//! The codes of both specs' error tables (`sandbox-service.md` and
//! `custom-tables.md`, section 7) and the ones this service adds are variants of
//! [`Code`], each with the class (and so the HTTP status) it is answered with by
//! default. Domain errors name a `Code`; the API turns it into a response in one
//! place. `api/tests/http/error_codes.rs` walks the specs' error tables and checks
//! that every code there is a variant, produced by a named test or listed as not
//! built yet.

use crate::error::ErrorClass;

macro_rules! codes {
    ($( $(#[$doc:meta])* $variant:ident = $code:literal => $class:ident, )*) => {
        /// A machine error code (the `code` of `{detail: {code, message}}`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Code {
            $( $(#[$doc])* $variant, )*
        }

        impl Code {
            /// Every code.
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            /// The code as the wire carries it.
            pub fn as_str(self) -> &'static str {
                match self { $(Code::$variant => $code,)* }
            }

            /// The class it is answered with unless a route states otherwise.
            pub fn class(self) -> ErrorClass {
                match self { $(Code::$variant => ErrorClass::$class,)* }
            }

            /// The code with this wire name.
            pub fn parse(code: &str) -> Option<Code> {
                match code { $($code => Some(Code::$variant),)* _ => None }
            }
        }
    };
}

codes! {
    // sandbox-service.md section 7: 403.
    /// Creating a task or environment in a scope the caller cannot own.
    OwnerScopeForbidden = "owner_scope_forbidden" => Forbidden,
    /// A chatroom-owned catalog entry created around the enum.
    ChatroomOwnerScopeRemoved = "chatroom_owner_scope_removed" => Forbidden,
    /// An output policy's author, publisher or submitter lacks its authority.
    OutputPolicyAuthorDenied = "output_policy_author_denied" => Forbidden,
    /// The submitter cannot mint a writeback credential.
    WritebackAuthorityDenied = "writeback_authority_denied" => Forbidden,
    /// The pricing envelope does not fit the company quota.
    BudgetReservationExceeded = "budget_reservation_exceeded" => Forbidden,
    /// A table-writeback token issued before the table became commands_only.
    GovernedContextRequired = "governed_context_required" => Forbidden,
    // sandbox-service.md section 7: 422.
    /// Submit, retry, Quick Run or a secret write without `Idempotency-Key`.
    IdempotencyKeyRequired = "idempotency_key_required" => Validation,
    /// An invalid writeback policy at draft or publish.
    OutputPolicyInvalid = "output_policy_invalid" => Validation,
    /// The writeback policy names no table of the company.
    OutputPolicyTableNotFound = "output_policy_table_not_found" => Validation,
    /// The writeback table has a channel rule.
    OutputPolicyChannelTable = "output_policy_channel_table" => Validation,
    /// The writeback table's write policy is commands_only.
    OutputPolicyGovernedTable = "output_policy_governed_table" => Validation,
    /// No live write-type Command with that id in the company.
    OutputPolicyCommandNotFound = "output_policy_command_not_found" => Validation,
    /// The policy's input_schema differs from the Command's inputs.
    OutputPolicySchemaMismatch = "output_policy_schema_mismatch" => Validation,
    /// Pricing: no active region.
    NoActiveRegion = "no_active_region" => Validation,
    /// Pricing: no price.
    MissingPrice = "missing_price" => Validation,
    /// Pricing: an invalid envelope.
    InvalidEnvelope = "invalid_envelope" => Validation,
    /// Pricing: no window.
    MissingWindow = "missing_window" => Validation,
    /// timeout_seconds above the company ceiling at publish or Quick Run.
    TimeoutExceedsCeiling = "timeout_exceeds_ceiling" => Validation,
    /// A draft's job contract is invalid.
    JobContractInvalid = "job_contract_invalid" => Validation,
    /// The input fails the published version's schema.
    InputSchemaViolation = "input_schema_violation" => Validation,
    /// The input cannot be canonicalized or persisted.
    InputNotStageable = "input_not_stageable" => Validation,
    /// The build region is not in the deployment's catalog.
    BuildRegionUnavailable = "build_region_unavailable" => Validation,
    /// A bundle archive holds a reserved or hostile path.
    BundlePathForbidden = "bundle_path_forbidden" => Validation,
    /// A script upload over 1 MiB.
    ScriptTooLarge = "script_too_large" => Validation,
    /// A script upload that is not UTF-8.
    ScriptNotUtf8 = "script_not_utf8" => Validation,
    /// A script upload holding NUL.
    ScriptContainsNul = "script_contains_nul" => Validation,
    /// A bad secret slot policy map in a share.
    SecretSlotPoliciesInvalid = "secret_slot_policies_invalid" => Validation,
    /// A plaintext secret value.
    SandboxPlaintextValueRejected = "sandbox_plaintext_value_rejected" => Validation,
    /// A secret write without an encrypted value.
    SandboxEncryptedValueRequired = "sandbox_encrypted_value_required" => Validation,
    /// No transit key pair (the public-key route answers it with 503).
    SandboxTransitKeypairMissing = "sandbox_transit_keypair_missing" => Validation,
    /// An encrypted value that does not decrypt.
    SandboxEncryptedValueUndecryptable = "sandbox_encrypted_value_undecryptable" => Validation,
    /// A secret value under 4 UTF-8 bytes.
    SandboxValueTooShort = "sandbox_value_too_short" => Validation,
    /// The command output fails the Command's input schema.
    OutputSchemaViolation = "output_schema_violation" => Validation,
    // sandbox-service.md section 7: 413 and 400.
    /// A body over its Content-Length guard.
    RequestTooLarge = "request_too_large" => TooLarge,
    /// A context PUT above declared_bytes.
    ContextTooLarge = "context_too_large" => TooLarge,
    /// A malformed Content-Length.
    InvalidContentLength = "invalid_content_length" => BadRequest,
    // sandbox-service.md section 7: 409.
    /// Enable or submit for a task not shared to the room.
    TaskNotSharedToRoom = "task_not_shared_to_room" => Conflict,
    /// A bundle task on an unapproved runner release.
    TaskBundleRunnerUnsupported = "task_bundle_runner_unsupported" => Conflict,
    /// The version's state cannot start a build.
    BuildNotEligible = "build_not_eligible" => Conflict,
    /// A non-terminal build attempt exists.
    NonterminalExists = "nonterminal_exists" => Conflict,
    /// The attempt or run is terminal.
    NotCancellable = "not_cancellable" => Conflict,
    /// A retry of something that cannot be retried.
    RetryNotEligible = "retry_not_eligible" => Conflict,
    /// A build retry after 7 days.
    RetryWindowExpired = "retry_window_expired" => Conflict,
    /// retry-provisioning in the wrong state.
    ProvisioningRetryNotEligible = "provisioning_retry_not_eligible" => Conflict,
    /// The retained input cannot be replayed.
    RetryInputUnavailable = "retry_input_unavailable" => Conflict,
    /// An approval digest differs from the published version.
    TaskVersionDigestMismatch = "task_version_digest_mismatch" => Conflict,
    /// An approval for an unpublished version.
    TaskVersionNotPublished = "task_version_not_published" => Conflict,
    /// A live grant exists for task and target.
    ShareAlreadyLive = "share_already_live" => Conflict,
    /// The settings' optimistic lock.
    PolicyVersionConflict = "policy_version_conflict" => Conflict,
    /// The same Idempotency-Key with a different request.
    IdempotencyConflict = "idempotency_conflict" => Conflict,
    /// The company is at its active-environment limit.
    ActiveEnvironmentLimit = "active_environment_limit" => Conflict,
    /// A scrubbed version is never runnable again.
    ContentScrubbedIrreversible = "content_scrubbed_irreversible" => Conflict,
    /// Any other not-published-and-active version.
    VersionNotRunnable = "version_not_runnable" => Conflict,
    /// No capacity-retained version can be allocated.
    VersionAllocationExhausted = "version_allocation_exhausted" => Conflict,
    /// The upload capability does not match the session.
    CapabilityFenced = "capability_fenced" => Conflict,
    /// A company-owned task publishing an output policy.
    OutputPolicyOwnerScopeUnsupported = "output_policy_owner_scope_unsupported" => Conflict,
    /// The output policy cannot be satisfied.
    OutputPolicyUnsatisfiable = "output_policy_unsatisfiable" => Conflict,
    /// A change of an archived task.
    TaskArchived = "task_archived" => Conflict,
    /// A repeated archive.
    AlreadyArchived = "already_archived" => Conflict,
    /// The command-output credential's run is no longer in progress (404 when the
    /// credential is unknown).
    OutputRunUnavailable = "output_run_unavailable" => Conflict,
    /// The Command changed since the run started.
    OutputCommandStale = "output_command_stale" => Conflict,
    /// The Command's write conflicted.
    OutputCommandConflict = "output_command_conflict" => Conflict,
    /// A control-surface code that never reaches the tenant API.
    ShareGrantRevoked = "share_grant_revoked" => Conflict,
    // sandbox-service.md section 7: 429.
    /// The company's queued-run limit.
    SandboxQueuedRunLimit = "sandbox_queued_run_limit" => RateLimited,
    /// The on-prem fleet queue is full.
    QueueFull = "queue_full" => RateLimited,
    /// 20 live upload slots or 20 GiB declared.
    StagingSlotExhausted = "staging_slot_exhausted" => RateLimited,
    /// More than 5 upload inits per minute.
    UploadRateLimited = "upload_rate_limited" => RateLimited,
    // sandbox-service.md section 7: 503.
    /// The kill switch.
    SandboxDisabled = "sandbox_disabled" => Unavailable,
    /// The secret write adapter has no pepper.
    SandboxSecretPepperMissing = "sandbox_secret_pepper_missing" => Unavailable,
    /// The secret store is not configured.
    SandboxSecretstoreUnconfigured = "sandbox_secretstore_unconfigured" => Unavailable,
    /// The upload capability service is down.
    CapabilityUnavailable = "capability_unavailable" => Unavailable,
    /// Object storage is down.
    StorageUnavailable = "storage_unavailable" => Unavailable,
    /// Object storage for input staging is down.
    InputStagingUnavailable = "input_staging_unavailable" => Unavailable,
    /// A platform stage-image rollout fences build admission.
    BuildAdmissionFenced = "build_admission_fenced" => Unavailable,
    /// A writeback policy without its signing key.
    SandboxWritebackKeyUnavailable = "sandbox_writeback_key_unavailable" => Unavailable,
    // sandbox-service.md section 7: agent tool codes.
    /// Agent: reauthorization or ownership failed.
    Unauthorized = "unauthorized" => Forbidden,
    /// Agent: bad arguments or a 400/409/422 refusal; over HTTP, settings
    /// validation.
    ValidationError = "validation_error" => Validation,
    /// Agent: the receipt is not a signed multi-segment token.
    ForgedReceipt = "forged_receipt" => Validation,
    /// Missing or hidden (answered as the uniform 404 over HTTP).
    NotFound = "not_found" => NotFound,
    /// Agent: another closed-form confirmation failure.
    ConfirmationRejected = "confirmation_rejected" => Validation,
    /// Agent: the proposal already became a run.
    AlreadyCommitted = "already_committed" => Conflict,
    /// Agent: the proposal is not prepared.
    ProposalNotPending = "proposal_not_pending" => Conflict,
    /// Agent: the confirming message is the originating turn.
    SameTurn = "same_turn" => Validation,
    /// Agent: the confirming message is not strictly later.
    NotLater = "not_later" => Validation,
    /// Agent: this turn already committed another proposal.
    ReceiptReused = "receipt_reused" => Conflict,
    /// Agent: a transient commit failure.
    Retryable = "retryable" => Unavailable,
    /// Agent: the durable input cannot be replayed.
    ConfirmationInputUnavailable = "confirmation_input_unavailable" => Conflict,
    /// Agent: the control plane is unavailable.
    ProviderUnavailable = "provider_unavailable" => Unavailable,
    /// A bug: a generic message, the cause only in the log.
    InternalError = "internal_error" => Internal,
    // custom-tables.md.
    /// A write of a caller with no eligible room on a channel-governed table
    /// (answered `{error: scp_scope_undeclared}`).
    ScpScopeUndeclared = "scp_scope_undeclared" => Forbidden,
    /// A trigger's schedule type changed under its id.
    ScheduleKindChangeRequiresNewTriggerId = "schedule_kind_change_requires_new_trigger_id" => BadRequest,
    /// A trigger set breaks a trigger rule (this service's code).
    TriggerConfigInvalid = "trigger_config_invalid" => BadRequest,
    /// A trigger's cron expression is not five POSIX fields (issue 22 contract).
    InvalidCronExpression = "invalid_cron_expression" => BadRequest,
    /// An `execute_command` trigger action, while Commands are not built (this
    /// service's code).
    CommandsNotAvailable = "commands_not_available" => Validation,
    /// `now` sent to the operator's trigger pass by a server that takes no clock
    /// override (this service's code).
    ClockOverrideDisabled = "clock_override_disabled" => BadRequest,
    /// A review group or template breaks a rule (this service's code).
    ReviewConfigInvalid = "review_config_invalid" => BadRequest,
    /// An approval rule set breaks a rule (this service's code).
    RuleConfigInvalid = "rule_config_invalid" => BadRequest,
    /// A callback token has as many writes held for approval as it may (spec
    /// "approval pending bucket is full"; this service's code).
    ApprovalPendingBucketFull = "approval_pending_bucket_full" => RateLimited,
    /// A held write was approved or rejected already (this service's code).
    StagedChangeNotPending = "staged_change_not_pending" => Conflict,
    /// An approval without the signature the review template asks for (this
    /// service's code).
    ReviewSignatureRequired = "review_signature_required" => BadRequest,
    /// A trigger reads the column being deleted or retyped (this service's code).
    ColumnUsedByTrigger = "column_used_by_trigger" => Conflict,
    /// A retry while a run of the same trigger is pending (this service's code).
    TriggerRunActive = "trigger_run_active" => Conflict,
    /// A write Command's match finds more than one record (this service's code).
    CommandMatchAmbiguous = "command_match_ambiguous" => Conflict,
    /// A raw agent write on a table whose writes go through Commands.
    TableGovernedByCommands = "table_governed_by_commands" => Forbidden,
    /// The column configuration breaks a ColumnCreate or ColumnUpdate rule.
    ColumnConfigInvalid = "column_config_invalid" => BadRequest,
    /// Another column of the table has this name.
    ColumnNameTaken = "column_name_taken" => BadRequest,
    /// The column name is reserved.
    ColumnNameReserved = "column_name_reserved" => BadRequest,
    /// Existing rows need a default for a new required column.
    ColumnDefaultRequired = "column_default_required" => BadRequest,
    /// A column made required while live records leave it empty.
    ColumnRequiredHasEmptyCells = "column_required_has_empty_cells" => BadRequest,
    /// A table setting is invalid.
    TableConfigInvalid = "table_config_invalid" => BadRequest,
    /// A cell value does not fit its column.
    InvalidRecordValue = "invalid_record_value" => BadRequest,
    /// A filter, sort, projection or aggregation is invalid.
    InvalidQuery = "invalid_query" => BadRequest,
    /// A select option live records use would be removed (with a usage count).
    OptionInUse = "option_in_use" => Conflict,
    /// Saved views use the column being deleted.
    ColumnUsedByView = "column_used_by_view" => Conflict,
    /// Formula columns read the column being deleted or retyped.
    ColumnUsedByComputedColumn = "column_used_by_computed_column" => Conflict,
    /// The column is the table's channel scope column.
    ColumnIsChannelScope = "column_is_channel_scope" => Conflict,
    /// A background migration holds the table.
    TableLocked = "table_locked" => Locked,
    /// A view, column or row policy that a public read token may not publish.
    NotPublishable = "not_publishable" => Validation,
    /// A table governed by a scoped channel policy cannot be published.
    TableChannelGoverned = "table_channel_governed" => Conflict,
    /// A public read token exceeded its requests per minute.
    PublicTokenRateLimited = "public_token_rate_limited" => RateLimited,
    /// A callback token exceeded its 60 requests per minute.
    CallbackRateLimited = "callback_rate_limited" => RateLimited,
    /// A callback token may not perform the requested operation (an update with a
    /// create-only token).
    CallbackOpNotAllowed = "callback_op_not_allowed" => Forbidden,
    /// A grant names a subject that does not exist in the company.
    SubjectNotFound = "subject_not_found" => NotFound,
    // This service's own codes.
    /// Two writers changed one aggregate at once; nothing changed, resend.
    ConcurrentModification = "concurrent_modification" => Conflict,
    /// The write committed but the read models did not show it in time.
    CommittedNotYetVisible = "committed_not_yet_visible" => Unavailable,
    /// A PATCH without any field.
    NoFields = "no_fields" => Validation,
    /// An import file that is not a CSV or XLSX file the import reads.
    ImportFileInvalid = "import_file_invalid" => BadRequest,
    /// Import rows whose values do not fit their columns (nothing was imported).
    ImportRowsInvalid = "import_rows_invalid" => Validation,
    /// More name resolutions (`name_eq`, `name_contains`) on one table than the
    /// caller's budget: 30 per 300 seconds for users, 10 for social media clients.
    NameResolutionRateLimited = "name_resolution_rate_limited" => RateLimited,
    /// A wrong client-access passphrase.
    PassphraseInvalid = "passphrase_invalid" => Forbidden,
    /// More than 5 passphrase attempts per 300 seconds for one table and client.
    PassphraseRateLimited = "passphrase_rate_limited" => RateLimited,
    /// A deployment document whose plan has errors (apply wrote nothing), or a
    /// deployment request without a valid system name.
    DeploymentPlanInvalid = "deployment_plan_invalid" => Validation,
    /// A body that is not the JSON the route takes.
    InvalidBody = "invalid_body" => BadRequest,
    /// A context archive or build context that breaks the rules.
    ContextInvalid = "context_invalid" => Validation,
    /// A change of an archived environment.
    EnvironmentArchived = "environment_archived" => Conflict,
    /// The environment version is not ready.
    EnvironmentVersionNotReady = "environment_version_not_ready" => Conflict,
    /// The company's build queue is full.
    BuildQueueFull = "build_queue_full" => RateLimited,
    /// A live binding exists for the task in the room.
    BindingAlreadyLive = "binding_already_live" => Conflict,
    /// The aggregate exists already.
    AlreadyExists = "already_exists" => Conflict,
    /// The object was recorded already.
    ObjectAlreadyRecorded = "object_already_recorded" => Conflict,
    /// The upload session's state does not allow the step.
    UploadStateConflict = "upload_state_conflict" => Conflict,
    /// complete before every byte arrived.
    UploadIncomplete = "upload_incomplete" => Conflict,
    /// The upload session expired.
    UploadExpired = "upload_expired" => Conflict,
    /// A build step of an attempt that moved on.
    BuildStepStale = "build_step_stale" => Conflict,
    /// A directory entry that is not registered.
    DirectoryEntryNotRegistered = "directory_entry_not_registered" => Conflict,
    /// A directory entry of another company.
    DirectoryCompanyMismatch = "directory_company_mismatch" => Conflict,
    /// The API key is revoked.
    ApiKeyRevoked = "api_key_revoked" => Conflict,
    /// A state transition the object's state does not allow.
    IllegalStateTransition = "illegal_state_transition" => Conflict,
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_snake_case_and_parse_back() {
        let mut seen = std::collections::BTreeSet::new();
        for code in Code::ALL {
            let s = code.as_str();
            assert!(seen.insert(s), "{s} twice");
            assert!(
                s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                "{s}"
            );
            assert_eq!(Code::parse(s), Some(*code));
        }
    }
}
