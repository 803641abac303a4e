//! The operator limits of a company, as its settings read model holds them.

use crate::error::ApiResult;
use domain::settings::OperatorLimits;
use sqlx::PgPool;
use uuid::Uuid;

/// The company's limits (defaults until the operator changes them).
pub async fn company_limits(pool: &PgPool, company: Uuid) -> ApiResult<OperatorLimits> {
    Ok(projections::read_models::company_settings::query::limits(pool, company).await?)
}

/// The effective capacity-retained version limit (spec section 8): the lower of the
/// configured value and 10 percent of the smallest confirmed job quota across the
/// active regions; 0 when a region's quota is unknown or no region is active.
pub fn capacity_retained_limit(configured: i64, job_quotas: &[(String, Option<u64>)]) -> i64 {
    if job_quotas.is_empty() {
        return 0;
    }
    let mut smallest = u64::MAX;
    for (_, quota) in job_quotas {
        match quota {
            Some(quota) => smallest = smallest.min(*quota),
            None => return 0,
        }
    }
    configured.min((smallest / 10) as i64)
}

#[cfg(test)]
mod tests {
    use super::capacity_retained_limit;

    #[test]
    fn the_lower_of_configured_and_a_tenth_of_the_smallest_quota() {
        let quotas =
            |q: &[Option<u64>]| q.iter().map(|q| ("r".to_string(), *q)).collect::<Vec<_>>();
        assert_eq!(capacity_retained_limit(100, &quotas(&[Some(1000)])), 100);
        assert_eq!(
            capacity_retained_limit(100, &quotas(&[Some(500), Some(2000)])),
            50
        );
        assert_eq!(capacity_retained_limit(100, &quotas(&[Some(500), None])), 0);
        assert_eq!(capacity_retained_limit(100, &[]), 0);
        assert_eq!(capacity_retained_limit(0, &quotas(&[Some(1000)])), 0);
    }
}
