//! Checks of the parameters handlers share, on the lexicon-validated [`Params`]: record AT
//! URIs, DIDs, listing cursors and numeric offsets. Each error names its parameter.

use data_encoding::BASE64URL_NOPAD;
use lexicons::{formats, Params};
use projections::rows::is_listing_key;

use crate::error::ApiError;

/// Checks that `uri` is the AT URI of a record, naming its repository by DID, and returns its
/// parts.
pub fn parse_record_uri<'a>(field: &str, uri: &'a str) -> Result<formats::AtUri<'a>, ApiError> {
    match formats::parse_at_uri(uri) {
        Some(u) if u.collection.is_some() && u.rkey.is_some() => {
            if !formats::is_did(u.authority) {
                return Err(ApiError::invalid_param(field, "the AT URI must name its repository by DID"));
            }
            Ok(u)
        }
        Some(_) => Err(ApiError::invalid_param(field, "the AT URI must name a collection and a record key")),
        None => Err(ApiError::invalid_param(field, "must be a valid AT URI (at://did/collection/rkey)")),
    }
}

/// Checks a DID parameter.
pub fn check_did(field: &str, did: &str) -> Result<(), ApiError> {
    if formats::is_did(did) {
        Ok(())
    } else {
        Err(ApiError::invalid_param(field, "must be a valid DID"))
    }
}

/// The record AT URI parameter `name` (`""` when absent, which fails the check).
pub fn uri_param<'a>(params: &'a Params, name: &str) -> Result<&'a str, ApiError> {
    let uri = params.str(name).unwrap_or_default();
    parse_record_uri(name, uri)?;
    Ok(uri)
}

/// The DID parameter `name` (`""` when absent, which fails the check).
pub fn did_param<'a>(params: &'a Params, name: &str) -> Result<&'a str, ApiError> {
    let did = params.str(name).unwrap_or_default();
    check_did(name, did)?;
    Ok(did)
}

/// The `cursor` parameter of a listing of the attached model: the listing key a previous
/// page ended at.
pub fn cursor(params: &Params) -> Result<Option<Vec<u8>>, ApiError> {
    let Some(raw) = params.str("cursor") else { return Ok(None) };
    match BASE64URL_NOPAD.decode(raw.as_bytes()) {
        Ok(key) if is_listing_key(&key) => Ok(Some(key)),
        _ => Err(ApiError::invalid_param("cursor", "not a cursor of this listing")),
    }
}

/// A numeric-offset `cursor` (`0` when absent), as the admin listings page.
pub fn offset(params: &Params) -> Result<usize, ApiError> {
    match params.str("cursor") {
        None => Ok(0),
        Some(raw) => raw.parse().map_err(|_| ApiError::invalid_param("cursor", "not a cursor of this listing (a number)")),
    }
}
