//! The sandbox authorization matrix: a world with one principal of every standing
//! (`world`), the resources the routes act on (`fixture`), the request each route
//! sends (`requests`) and the golden matrix they are checked against (`matrix`,
//! `authorization_matrix.json`).

mod fixture;
pub mod matrix;
mod requests;
mod world;
