//! Proposal receipts: what an agent hands back to commit a proposal. A receipt is
//! five dot-separated segments, `spr1.<proposal>.<expiry>.<binding>.<tag>`:
//! the proposal's id, the Unix second it stops verifying ([`RECEIPT_TTL_SECONDS`]
//! after signing), the SHA-256 of what it is bound to (the proposal, the principal,
//! the room, the input's digest and the exact version), and an HMAC-SHA256 tag over
//! the first four segments with a key derived from the receipt secret, which only
//! this service holds (a chat platform that signs turns cannot sign receipts). A
//! receipt moved to
//! another proposal, person, room or input no longer matches its binding; an edited
//! segment no longer matches its tag; a bare id is not a receipt at all.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use uuid::Uuid;

/// How long a receipt verifies.
pub const RECEIPT_TTL_SECONDS: i64 = 600;

const VERSION: &str = "spr1";

/// What a receipt is bound to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiptBinding<'a> {
    /// The proposal.
    pub proposal_id: Uuid,
    /// The principal (`user:<id>` or `social_media_client:<id>`).
    pub principal: &'a str,
    /// The room.
    pub chatroom_id: Uuid,
    /// The input's digest.
    pub input_digest: &'a str,
    /// The exact version.
    pub task_version_id: Uuid,
}

impl ReceiptBinding<'_> {
    fn digest(&self) -> String {
        let text = format!(
            "{}\n{}\n{}\n{}\n{}",
            self.proposal_id,
            self.principal,
            self.chatroom_id,
            self.input_digest,
            self.task_version_id
        );
        URL_SAFE_NO_PAD.encode(Sha256::digest(text.as_bytes()))
    }
}

/// Why a receipt did not verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReceiptError {
    /// Not a signed five-segment receipt of this service (`forged_receipt`).
    Forged,
    /// Signed, but expired or bound to something else (`not_found`).
    NotValid,
}

/// Signs and checks receipts.
#[derive(Clone)]
pub struct ReceiptKey([u8; 32]);

impl ReceiptKey {
    /// The receipt key derived from the receipt secret.
    pub fn derive(secret: &[u8]) -> Self {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key");
        mac.update(b"sandbox agent proposal receipts v1");
        Self(mac.finalize().into_bytes().into())
    }

    fn tag(&self, signed: &str) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes any key");
        mac.update(signed.as_bytes());
        mac
    }

    /// A receipt for the binding, valid until `now + RECEIPT_TTL_SECONDS`.
    pub fn sign(&self, binding: &ReceiptBinding<'_>, now: i64) -> String {
        let signed = format!(
            "{VERSION}.{}.{}.{}",
            binding.proposal_id.simple(),
            now + RECEIPT_TTL_SECONDS,
            binding.digest()
        );
        let tag = URL_SAFE_NO_PAD.encode(self.tag(&signed).finalize().into_bytes());
        format!("{signed}.{tag}")
    }

    /// The proposal a receipt names, when its tag is this service's. The binding is
    /// checked afterwards by [`Self::verify`], once the proposal is loaded.
    pub fn proposal_of(&self, receipt: &str) -> Result<Uuid, ReceiptError> {
        let segments: Vec<&str> = receipt.split('.').collect();
        let [version, proposal, _, _, tag] = segments[..] else {
            return Err(ReceiptError::Forged);
        };
        let signed = &receipt[..receipt.len() - tag.len() - 1];
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| ReceiptError::Forged)?;
        if version != VERSION || self.tag(signed).verify_slice(&tag).is_err() {
            return Err(ReceiptError::Forged);
        }
        Uuid::try_parse(proposal).map_err(|_| ReceiptError::Forged)
    }

    /// Verifies a receipt against what it must be bound to at `now`.
    pub fn verify(
        &self,
        receipt: &str,
        binding: &ReceiptBinding<'_>,
        now: i64,
    ) -> Result<(), ReceiptError> {
        let proposal = self.proposal_of(receipt)?;
        let segments: Vec<&str> = receipt.split('.').collect();
        let expiry: i64 = segments[2].parse().map_err(|_| ReceiptError::Forged)?;
        if proposal != binding.proposal_id || now >= expiry || segments[3] != binding.digest() {
            return Err(ReceiptError::NotValid);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const NOW: i64 = 1_800_000_000;

    fn key() -> ReceiptKey {
        ReceiptKey::derive(b"0123456789abcdef0123456789abcdef")
    }

    fn binding<'a>(principal: &'a str, digest: &'a str) -> ReceiptBinding<'a> {
        ReceiptBinding {
            proposal_id: Uuid::from_u128(1),
            principal,
            chatroom_id: Uuid::from_u128(2),
            input_digest: digest,
            task_version_id: Uuid::from_u128(3),
        }
    }

    #[test]
    fn a_receipt_has_five_segments_and_verifies_until_its_expiry() {
        let b = binding("user:a", "sha256:aa");
        let receipt = key().sign(&b, NOW);
        assert_eq!(receipt.matches('.').count(), 4);
        assert_eq!(key().verify(&receipt, &b, NOW + 599), Ok(()));
        assert_eq!(
            key().verify(&receipt, &b, NOW + 600),
            Err(ReceiptError::NotValid)
        );
        let bare = Uuid::from_u128(1).to_string();
        assert_eq!(key().proposal_of(&bare), Err(ReceiptError::Forged));
    }

    #[test]
    fn a_receipt_does_not_move_to_another_proposal_person_room_version_or_input() {
        let b = binding("user:a", "sha256:aa");
        let receipt = key().sign(&b, NOW);
        let others = [
            ReceiptBinding {
                proposal_id: Uuid::from_u128(9),
                ..b.clone()
            },
            binding("user:b", "sha256:aa"),
            ReceiptBinding {
                chatroom_id: Uuid::from_u128(9),
                ..b.clone()
            },
            binding("user:a", "sha256:bb"),
            ReceiptBinding {
                task_version_id: Uuid::from_u128(9),
                ..b.clone()
            },
        ];
        for other in others {
            assert_eq!(
                key().verify(&receipt, &other, NOW),
                Err(ReceiptError::NotValid)
            );
        }
        let stranger = ReceiptKey::derive(b"another key of sufficient length!!!!");
        assert_eq!(
            stranger.verify(&receipt, &b, NOW),
            Err(ReceiptError::Forged)
        );
    }

    proptest! {
        /// Any change to any segment of a receipt makes it fail.
        #[test]
        fn a_tampered_receipt_never_verifies(
            segment in 0usize..5,
            position in any::<prop::sample::Index>(),
            replacement in "[A-Za-z0-9_-]",
        ) {
            let b = binding("user:a", "sha256:aa");
            let receipt = key().sign(&b, NOW);
            let mut segments: Vec<String> = receipt.split('.').map(String::from).collect();
            let target = &mut segments[segment];
            let at = position.index(target.len());
            let original = target.chars().nth(at).unwrap();
            prop_assume!(original.to_string() != replacement);
            target.replace_range(at..at + 1, &replacement);
            let tampered = segments.join(".");
            prop_assert!(key().verify(&tampered, &b, NOW).is_err());
        }
    }
}
