//! English stemming with a cache of the words already stemmed.
//!
//! Snowball stemming was half of the indexing threads' time, and the vocabulary of
//! abstracts is small and skewed: most tokens are words seen many times. The filter gives
//! exactly tantivy's `en_stem` tokens (same tokenizer, same filters, same stemmer), so it is
//! registered under that name and indexes built before it stay valid.

use std::collections::HashMap;

use rust_stemmers::{Algorithm, Stemmer};
use rustc_hash::FxBuildHasher;
use tantivy::tokenizer::{
    AsciiFoldingFilter, LowerCaser, RemoveLongFilter, SimpleTokenizer, TextAnalyzer, Token, TokenFilter, TokenStream, Tokenizer,
};

/// The most distinct words one cache remembers; past it, new words are stemmed uncached.
const MAX_CACHED_WORDS: usize = 200_000;

/// A word of up to 23 bytes stored inline, so a cache probe touches one entry and no heap.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct InlineWord {
    len: u8,
    bytes: [u8; 23],
}

impl InlineWord {
    fn new(word: &str) -> Option<InlineWord> {
        let mut bytes = [0u8; 23];
        bytes.get_mut(..word.len())?.copy_from_slice(word.as_bytes());
        Some(InlineWord { len: word.len() as u8, bytes })
    }

    fn as_str(&self) -> &str {
        // Only ever built from a whole `&str`, or from a stem no longer than its word.
        std::str::from_utf8(&self.bytes[..self.len as usize]).unwrap_or_default()
    }
}

type StemCache = HashMap<InlineWord, InlineWord, FxBuildHasher>;

/// The `en_stem` analyzer with a stem cache per analyzer instance (tantivy clones an analyzer
/// for each field of each segment writer, so caches are never shared between threads).
pub fn en_stem() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(CachedEnglishStemmer)
        .build()
}

/// The name of [`en_fold`] in an index's tokenizer registry.
pub const EN_FOLD: &str = "en_fold";
/// The name of [`names_fold`] in an index's tokenizer registry.
pub const NAMES_FOLD: &str = "names_fold";

/// Text fields: `en_stem` with accents folded to ASCII before stemming, at index and query
/// time alike, so `Gómez-Rodríguez` and `Gomez-Rodriguez` give the same terms.
pub fn en_fold() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .filter(CachedEnglishStemmer)
        .build()
}

/// Names: words lower-cased and accents folded, not stemmed.
pub fn names_fold() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .build()
}

/// A [`TokenFilter`] stemming lower-cased English tokens through a cache.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CachedEnglishStemmer;

impl TokenFilter for CachedEnglishStemmer {
    type Tokenizer<T: Tokenizer> = CachedStemmerFilter<T>;

    fn transform<T: Tokenizer>(self, inner: T) -> CachedStemmerFilter<T> {
        CachedStemmerFilter { inner, stems: HashMap::default() }
    }
}

/// The tokenizer [`CachedEnglishStemmer`] wraps around the one before it.
#[derive(Clone)]
pub(crate) struct CachedStemmerFilter<T> {
    inner: T,
    stems: StemCache,
}

impl<T: Tokenizer> Tokenizer for CachedStemmerFilter<T> {
    type TokenStream<'a> = CachedStemmerStream<'a, T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        CachedStemmerStream { tail: self.inner.token_stream(text), stems: &mut self.stems, stemmer: Stemmer::create(Algorithm::English) }
    }
}

/// The token stream of [`CachedStemmerFilter`].
pub(crate) struct CachedStemmerStream<'a, T> {
    tail: T,
    stems: &'a mut StemCache,
    stemmer: Stemmer,
}

impl<T: TokenStream> TokenStream for CachedStemmerStream<'_, T> {
    fn advance(&mut self) -> bool {
        if !self.tail.advance() {
            return false;
        }
        let token = self.tail.token_mut();
        let Some(word) = InlineWord::new(&token.text) else {
            // Longer words are rare: stem them uncached.
            token.text = self.stemmer.stem(&token.text).into_owned();
            return true;
        };
        let stem = match self.stems.get(&word) {
            Some(stem) => *stem,
            None => {
                let stemmed = self.stemmer.stem(&token.text);
                let Some(stem) = InlineWord::new(&stemmed) else {
                    token.text = stemmed.into_owned();
                    return true;
                };
                if self.stems.len() < MAX_CACHED_WORDS {
                    self.stems.insert(word, stem);
                }
                stem
            }
        };
        token.text.clear();
        token.text.push_str(stem.as_str());
        true
    }

    fn token(&self) -> &Token {
        self.tail.token()
    }

    fn token_mut(&mut self) -> &mut Token {
        self.tail.token_mut()
    }
}

#[cfg(test)]
mod tests {
    use tantivy::tokenizer::TokenizerManager;

    use super::*;

    fn tokens(analyzer: &mut TextAnalyzer, text: &str) -> Vec<(String, usize, usize, usize)> {
        let mut stream = analyzer.token_stream(text);
        let mut out = Vec::new();
        while let Some(t) = stream.next() {
            out.push((t.text.clone(), t.position, t.offset_from, t.offset_to));
        }
        out
    }

    #[test]
    fn folded_analyzers_give_the_same_terms_with_and_without_accents() {
        for mut analyzer in [en_fold(), names_fold()] {
            let terms = |a: &mut TextAnalyzer, t: &str| tokens(a, t).into_iter().map(|t| t.0).collect::<Vec<_>>();
            assert_eq!(terms(&mut analyzer, "Gómez-Rodríguez Ñúñez Émile"), terms(&mut analyzer, "Gomez-Rodriguez Nunez Emile"));
        }
        let words: Vec<String> = tokens(&mut en_fold(), "Généralisations").into_iter().map(|t| t.0).collect();
        assert_eq!(words, vec!["generalis"]);
    }

    #[test]
    fn gives_exactly_tantivys_en_stem_tokens() {
        let mut reference = TokenizerManager::default().get("en_stem").unwrap();
        let mut cached = en_stem();
        let texts = [
            "Running runners ran; the networks are networking over neural networks.",
            "Neural NETWORKS, running again: généralisations of Généralisation and graphs' graphing",
            "a supercalifragilisticexpialidociouswordthatislongerthanforty characters is dropped",
            "Running runners ran; the networks are networking over neural networks.",
            "internationalizationsofthings twentythreecharacterwordx twentyfourcharacterswordx",
        ];
        for text in texts {
            assert_eq!(tokens(&mut cached, text), tokens(&mut reference, text), "{text}");
        }
    }
}
